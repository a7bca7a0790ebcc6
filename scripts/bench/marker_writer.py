#!/usr/bin/env python3
"""A task process that writes markers into a profile directory.

Usage: marker_writer.py DIR N [RATE]

Appends N marker lines to DIR/<pid>.jsonl, one os.write per line (as SPEC.md
asks of task processes). Each marker's startTime is the Unix epoch time, in
milliseconds to the microsecond, read just before its write: the log keeps it,
so the time from a write to the fdatasync that made it durable can be found
for every marker. Without RATE (markers per second) it writes as fast as it
can; with RATE it spaces the writes evenly.
Prints {"markers","first_write","last_write"} (epoch seconds).
"""
import json
import os
import sys
import time


def main():
    directory, count = sys.argv[1], int(sys.argv[2])
    spacing = 1.0 / float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    fd = os.open(os.path.join(directory, f"{os.getpid()}.jsonl"),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    first = time.time()
    start = time.monotonic()
    for i in range(count):
        if spacing:
            delay = start + i * spacing - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        now = time.time()
        os.write(fd, b'{"type":"marker","name":"bench","startTime":%.3f,'
                     b'"data":{"type":"Text","text":"marker %d"}}\n' % (now * 1000.0, i))
    last = time.time()
    os.close(fd)
    print(json.dumps({"markers": count, "first_write": first, "last_write": last}))


if __name__ == "__main__":
    main()
