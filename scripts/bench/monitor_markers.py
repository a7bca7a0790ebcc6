#!/usr/bin/env python3
"""Mozilla's monitor recording markers as fast as it can, streaming on (as CI runs it).

Usage: monitor_markers.py N STREAM.jsonl
Run with the venv python printed by ./setup-baseline.

The monitor from peers/ (peer.py) is started at a 1 s interval with
start_streaming(STREAM); then N record_marker calls, each a Text interval marker: the
monitor appends it to its list, json.dumps it, writes and flushes the line (never fsync).
Prints {"markers","seconds","markers_per_second","cpu_seconds_per_marker"}: seconds from
the first call to the last; CPU is this process's, the sampler child's left out.
"""
import json
import resource
import sys
import time

import peer  # noqa: F401 (puts the monitor on sys.path)
from mozsystemmonitor.resourcemonitor import SystemResourceMonitor


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    n, stream = int(sys.argv[1]), sys.argv[2]
    monitor = SystemResourceMonitor(poll_interval=1.0)
    monitor.start()
    monitor.start_streaming(stream)
    cpu0, t0 = cpu(), time.perf_counter()
    for _ in range(n):
        now = time.monotonic()
        SystemResourceMonitor.record_marker("bench", now, now, {"type": "Text", "text": "x"})
    seconds, spent = time.perf_counter() - t0, cpu() - cpu0
    monitor.stop()
    print(json.dumps({"markers": n, "seconds": round(seconds, 4),
                      "markers_per_second": round(n / seconds),
                      "cpu_seconds_per_marker": spent / n}))


if __name__ == "__main__":
    main()
