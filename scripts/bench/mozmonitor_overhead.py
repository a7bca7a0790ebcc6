#!/usr/bin/env python3
"""Overhead of Mozilla's SystemResourceMonitor while the task just sleeps.

Usage: mozmonitor_overhead.py INTERVAL_SECONDS DURATION_SECONDS
Run with the venv python printed by ./setup-baseline.

mozsystemmonitor 1.0.1 forks one sampler child (multiprocessing.Process,
'fork' start method on Linux) that polls psutil every INTERVAL, buffers every
sample in memory and only ships them over a Pipe when stop() is called; the
parent does nothing while recording but unpickles all samples in stop().
So the cost is: parent CPU from start() through stop() + the child's CPU.

How each figure is measured:
- parent CPU: getrusage(RUSAGE_SELF) delta from just before start() to just
  after stop() (the constructor's one-off psutil probe is reported apart).
- child CPU and peak RSS: getrusage(RUSAGE_CHILDREN) after stop() has joined
  (reaped) the sampler; it is the only child, so this is exactly its total
  user+sys and its VmHWM (ru_maxrss is the max over reaped children, in KiB).
- parent peak RSS: VmHWM from /proc/self/status at the end.
Peak RSS is a plain sum of the two; the forked child's RSS counts pages it
still shares copy-on-write with the parent, so the sum over-states real
memory by up to the parent's footprint at fork time.
"""
import json
import resource
import sys
import time

from mozsystemmonitor.resourcemonitor import SystemResourceMonitor


def cpu(ru):
    return ru.ru_utime + ru.ru_stime


def vmhwm_bytes(pid="self"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def main():
    interval, duration = float(sys.argv[1]), float(sys.argv[2])

    self0 = resource.getrusage(resource.RUSAGE_SELF)
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    monitor = SystemResourceMonitor(poll_interval=interval)
    self1 = resource.getrusage(resource.RUSAGE_SELF)

    wall0 = time.monotonic()
    monitor.start()
    time.sleep(duration)  # the "task": does nothing, so all CPU is the monitor's
    monitor.stop()  # sends terminate, receives all samples, joins the child
    wall = time.monotonic() - wall0

    self2 = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    parent_cpu = cpu(self2) - cpu(self1)
    child_cpu = cpu(children) - cpu(children0)
    parent_rss = vmhwm_bytes()
    child_rss = children.ru_maxrss * 1024  # Linux reports KiB

    print(json.dumps({
        "cpu_seconds": round(parent_cpu + child_cpu, 4),
        "wall_seconds": round(wall, 4),
        "peak_rss_bytes": parent_rss + child_rss,
        "samples": len(monitor.measurements),
        # the parts, so the sum can be judged
        "interval_seconds": interval,
        "cpu_seconds_per_wall_second": round((parent_cpu + child_cpu) / wall, 5),
        "parent_cpu_seconds": round(parent_cpu, 4),
        "child_cpu_seconds": round(child_cpu, 4),
        "init_cpu_seconds": round(cpu(self1) - cpu(self0), 4),
        "parent_peak_rss_bytes": parent_rss,
        "child_peak_rss_bytes": child_rss,
    }))


if __name__ == "__main__":
    main()
