#!/usr/bin/env python3
"""The recorder's CPU per process exit: a task of many short processes under `tc-profile run`.

Usage: scripts/bench/exits.py [--bin PATH] [--exits N] [--runs R]

The task runs N `/bin/true` (default 10,000) as fast as a shell starts them. The recorder
counts every exit through taskstats (as root), or, with CAP_NET_ADMIN out of its bounding
set (setpriv), samples its tree as without privilege: the baseline, measured in the same
run. CPU is the recorder's threads' time on CPU (/proc/PID/task/*/schedstat) from the
task's first exit to its last, read while the task waits after its loop. Prints a Markdown
table: medians over the runs, runs alternating.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from sampler_cost import thread_cpu_ns

REPO = Path(__file__).resolve().parent.parent.parent


def wait_for(path, timeout=120):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} never appeared")
        time.sleep(0.005)


def one_run(binary, exits, taskstats):
    """The recorder's CPU ns over the loop, the loop's wall s, and which way it saw exits."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        started, done = work / "started", work / "done"
        task = (f"touch {started}; sleep 0.5; i=0; while [ $i -lt {exits} ]; do /bin/true; "
                f"i=$((i+1)); done; touch {done}; sleep 1")
        launcher = [] if taskstats else ["setpriv", "--bounding-set=-net_admin", "--"]
        recorder = subprocess.Popen([*launcher, binary, "run", "-q", "-o", work / "p.json",
                                     "--", "sh", "-c", task], stdout=subprocess.DEVNULL)
        wait_for(started)
        time.sleep(0.25)
        before, began = thread_cpu_ns(recorder.pid), time.monotonic()
        wait_for(done)
        cpu, wall = thread_cpu_ns(recorder.pid) - before, time.monotonic() - began
        recorder.wait()
        meta = json.loads((work / "p.json").read_text())["meta"]
        return cpu, wall, meta["tcProfile"]["processExits"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=str(REPO / "target" / "release" / "tc-profile"))
    parser.add_argument("--exits", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("scripts/bench/exits.py: taskstats needs root")
    results = {True: [], False: []}
    for _ in range(args.runs):
        for taskstats in (True, False):
            results[taskstats].append(one_run(args.bin, args.exits, taskstats))
    print("| exits seen by | recorder CPU | per exit | exits per second |")
    print("|---|---|---|---|")
    medians = {}
    for taskstats, runs in results.items():
        seen = {s for _, _, s in runs}
        cpu = statistics.median(c for c, _, _ in runs)
        wall = statistics.median(w for _, w, _ in runs)
        medians[taskstats] = cpu
        print(f"| {'/'.join(sorted(seen))} | {cpu / 1e6:.1f} ms | {cpu / args.exits / 1e3:.2f} µs "
              f"| {args.exits / wall:,.0f} |")
    extra = (medians[True] - medians[False]) / args.exits / 1e3
    print(f"\nCounting every exit costs {extra:.2f} µs of recorder CPU per exit beyond sampling "
          f"({medians[True] / max(medians[False], 1):.2f}x the sampling recorder's CPU).")


if __name__ == "__main__":
    main()
