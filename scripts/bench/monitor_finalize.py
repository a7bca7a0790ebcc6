#!/usr/bin/env python3
"""Mozilla's monitor turning N markers into its profile: stop, as_profile, JSON dump.

Usage: monitor_finalize.py N STREAM.jsonl OUT.json [--own-text]
Run with the venv python printed by ./setup-baseline.

The monitor from peers/ (peer.py) records N markers with streaming on (the
same Text interval markers as monitor_markers.py, or with --own-text each its own text,
"step 1" to "step N", as a task's steps have), so STREAM is its own JSON Lines log of
them, the log tc-profile finalizes in the same run. Then the timed part, what the monitor
does at the end of a CI task: stop(), as_profile(), json.dump to OUT.
Prints {"seconds","peak_rss_bytes","markers"}: wall seconds of the timed part; peak RSS
is this process's (the sampler child's left out).
"""
import json
import resource
import sys
import time

import peer  # noqa: F401 (puts the monitor on sys.path)
from mozsystemmonitor.resourcemonitor import SystemResourceMonitor


def main():
    n, stream, out_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    own_text = sys.argv[4:] == ["--own-text"]
    monitor = SystemResourceMonitor(poll_interval=1.0)
    monitor.start()
    monitor.start_streaming(stream)
    for i in range(n):
        now = time.monotonic()
        text = f"step {i + 1}" if own_text else "x"
        SystemResourceMonitor.record_marker("bench", now, now + 0.001,
                                            {"type": "Text", "text": text})
    t0 = time.perf_counter()
    monitor.stop()
    profile = monitor.as_profile()
    with open(out_path, "w") as out:
        json.dump(profile, out)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": round(seconds, 4), "markers": n,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
