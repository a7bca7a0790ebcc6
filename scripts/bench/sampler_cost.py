#!/usr/bin/env python3
"""The recorder's CPU per wall-second while a task runs, at 0.1 s and 1 s intervals, with 500
live processes in the task's tree against the baseline of a 1-process tree, in the same run.

Usage: scripts/bench/sampler_cost.py [--short] [--runs N] [--bin PATH]

tc-profile runs `bash -c` that starts N sleeping processes and waits on a FIFO. Once the
log's "Task Memory" track counts them, the recorder's CPU time (every thread of it, from
/proc/<pid>/task/*/schedstat, in nanoseconds) is read, again after W seconds, and the
difference divided by W. Its peak RSS (VmHWM) is reported too. Runs alternate baseline and
500-process trees so that both see the same machine; the table gives the median and the
ratio of medians. --short takes 3 s windows and one run, to check the harness in CI.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
BIN = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "tc-profile"
TREE = 500


def thread_cpu_ns(pid):
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return total


def peak_rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def live_tree(log):
    """The task's live processes in the log's last "Task Memory" sample, or 0."""
    count = 0
    try:
        text = log.read_text()
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        if '"name":"Task Memory"' in line and line.endswith("}"):
            count = json.loads(line)["data"]["processes"]
    return count


def measure(binary, interval, processes, window, work):
    """CPU seconds per wall second and peak RSS (KiB) of one recording."""
    fifo = work / "go"
    log = work / "profile.jsonl"
    for path in (fifo, log, work / "profile.json"):
        path.unlink(missing_ok=True)
    os.mkfifo(fifo)
    script = (f'for i in $(seq {processes}); do sleep 3600 & done; '
              f'read go < "{fifo}"; kill $(jobs -p); wait')
    recorder = subprocess.Popen(
        [binary, "run", "--interval", str(interval), "-o", str(work / "profile.json"),
         "--", "bash", "-c", script],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while live_tree(log) < processes:
            if time.monotonic() > deadline:
                sys.exit(f"the tree of {processes} processes never showed in {log}")
            time.sleep(0.2)
        time.sleep(2 * interval)  # past the first ticks that found the processes
        start_cpu, start = thread_cpu_ns(recorder.pid), time.monotonic()
        time.sleep(window)
        cpu = (thread_cpu_ns(recorder.pid) - start_cpu) / 1e9
        wall = time.monotonic() - start
        rss = peak_rss_kib(recorder.pid)
    finally:
        with open(fifo, "w") as go:
            go.write("go\n")
        recorder.wait(timeout=120)
    return cpu / wall, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="3 s windows, one run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(BIN))
    args = parser.parse_args()
    runs = 1 if args.short else args.runs
    windows = {0.1: 3, 1.0: 3} if args.short else {0.1: 10, 1.0: 30}
    rows = []
    with tempfile.TemporaryDirectory(prefix="sampler-cost-") as tmp:
        work = Path(tmp)
        for interval, window in windows.items():
            results = {1: [], TREE: []}
            for _ in range(runs):
                for processes in results:
                    results[processes].append(
                        measure(args.bin, interval, processes, window, work))
            base = statistics.median(cpu for cpu, _ in results[1])
            tree = statistics.median(cpu for cpu, _ in results[TREE])
            rss = max(rss for _, rss in results[TREE])
            rows.append((interval, base, tree, tree / base if base else float("inf"), rss))
    print(f"Recorder CPU per wall-second (median of {runs}), "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print()
    print(f"| interval | 1-process tree | {TREE}-process tree | ratio | peak RSS, {TREE} |")
    print("|---|---|---|---|---|")
    for interval, base, tree, ratio, rss in rows:
        print(f"| {interval:g} s | {base * 100:.2f}% | {tree * 100:.2f}% | "
              f"{ratio:.1f}x | {rss / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
