#!/usr/bin/env python3
"""A task for the daemon's benchmark: a tree of PROCESSES processes (this one and
PROCESSES - 1 `sleep`s) that writes MARKERS marker lines a second into
$TASKCLUSTER_PROFILE_DIR for SECONDS, then ends with its children.

Usage: task_tree.py PROCESSES MARKERS SECONDS
"""
import json
import os
import subprocess
import sys
import time


def main():
    processes, markers, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    children = [subprocess.Popen(["sleep", str(seconds + 5)]) for _ in range(processes - 1)]
    path = os.path.join(os.environ["TASKCLUSTER_PROFILE_DIR"], f"{os.getpid()}.jsonl")
    end = time.monotonic() + seconds
    with open(path, "a", buffering=1) as out:
        n = 0
        next_at = time.monotonic()
        while next_at < end:
            now_ms = time.time() * 1000
            out.write(json.dumps({"type": "marker", "name": "step", "startTime": now_ms,
                                  "endTime": None, "data": {"type": "Text", "text": f"step {n}"}})
                      + "\n")
            n += 1
            next_at += 1 / markers
            time.sleep(max(0.0, next_at - time.monotonic()))
    for child in children:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
