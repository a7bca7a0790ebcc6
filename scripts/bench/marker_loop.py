#!/usr/bin/env python3
"""Per-marker cost of a Python monitor that streams markers as JSON Lines.

Usage: marker_loop.py N OUT_PATH

Each iteration does what a Python recorder must do per marker: read the
clock, json.dumps one marker dict, one write() and one flush() (so the line
reaches the kernel and survives a crash of the process; no fsync, which
would measure the disk rather than the recorder).
Prints {"markers":N,"seconds":...,"markers_per_second":...}.
"""
import json
import sys
import time


def main():
    n, out_path = int(sys.argv[1]), sys.argv[2]
    with open(out_path, "w") as out:
        t0 = time.perf_counter()
        for i in range(n):
            t = time.time() * 1000.0  # profiler times are milliseconds
            marker = {
                "type": "marker",
                "name": "m",
                "startTime": t,
                "endTime": t + 1.0,
                "data": {"type": "Text", "text": "x"},
            }
            out.write(json.dumps(marker) + "\n")
            out.flush()
        seconds = time.perf_counter() - t0
    print(json.dumps({
        "markers": n,
        "seconds": round(seconds, 4),
        "markers_per_second": round(n / seconds),
    }))


if __name__ == "__main__":
    main()
