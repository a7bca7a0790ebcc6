"""Writes N markers to $TASKCLUSTER_PROFILE_DIR/<pid>.jsonl, one write per line: instants,
complete intervals, and begin/end pairs that overlap the next marker. Every marker's name is
PID.I, so a test can count them and find each one's times in the file."""
import json
import os
import sys
import time

count = int(sys.argv[1])
path = os.path.join(os.environ["TASKCLUSTER_PROFILE_DIR"], f"{os.getpid()}.jsonl")
with open(path, "a", buffering=1) as out:
    def write(line):
        out.write(json.dumps(line, separators=(",", ":")) + "\n")

    pending_end = None
    for i in range(count):
        name = f"{os.getpid()}.{i}"
        now = time.time() * 1000
        kind = i % 3
        if kind == 0:
            write({"type": "marker", "name": name, "startTime": now})
        elif kind == 1:
            write({"type": "marker", "name": name, "startTime": now - 1, "endTime": now,
                   "category": "task"})
        else:
            write({"type": "begin", "name": name, "time": now})
        if pending_end:
            write({"type": "end", "name": pending_end, "time": time.time() * 1000})
            pending_end = None
        if kind == 2:
            pending_end = name
    if pending_end:
        write({"type": "end", "name": pending_end, "time": time.time() * 1000})
