#!/usr/bin/env python3
"""Write N synthetic task logs of 3 worker pools, as the recorder writes them.

Usage: fleet_make.py TEMPLATE DIR N

TEMPLATE is a log the recorder wrote (`tc-profile run --keep-log`): its meta and thread
lines, with their schemas and tables, are each task's, the machine and the task changed.
Each log is a task of 60 to 180 s sampled every second: CPU Use, Memory, IO, NetIO,
Task CPU and Other CPU with the recorder's fields, task tags in meta.tcProfile.task, a
clean footer; one task in 500 of the third pool has an OOM kill. Finalized by
`tc-profile finalize`, each is a profile of about 100 KB.
"""
import json
import os
import random
import sys

POOLS = [
    # worker type, instance type, cores, memory GiB, task cores (low, high), peak GiB
    ("build-large", "m5.4xlarge", 16, 64, (2.0, 5.0), (6.0, 10.0)),
    ("test-medium", "c5.2xlarge", 8, 16, (5.5, 7.5), (3.0, 5.0)),
    ("lint-small", "m5.xlarge", 4, 16, (0.5, 1.0), (2.0, 3.0)),
]
GIB = 1 << 30


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def marker(name, start, end, data):
    return compact({"type": "marker", "name": name, "startTime": start, "endTime": end,
                    "category": 0, "data": data})


def task_log(template, thread, index, rng, start_time):
    worker, instance, cores, memory, busy_range, peak_range = POOLS[index % 3]
    busy = rng.uniform(*busy_range)
    peak = rng.uniform(*peak_range) * GIB
    duration = rng.randint(60, 180)
    meta = dict(template, startTime=start_time, logicalCPUs=cores, physicalCPUs=cores,
                mainMemory=memory * GIB, CPUName="Bench CPU")
    meta["tcProfile"] = dict(template["tcProfile"], task={
        "taskId": f"task{index:06d}", "runId": "0", "workerType": worker,
        "instanceType": instance, "name": f"{worker}-chunk-{index % 16 + 1}"})
    lines = [compact(meta), thread]
    for second in range(duration):
        start, end = second * 1000.0, (second + 1) * 1000.0
        task = busy * (0.1 if second < duration // 5 else rng.uniform(0.8, 1.0)) / cores
        other = rng.uniform(0.0, 0.05)
        share = min(task + other, 1.0)
        used = int(peak if second == duration // 2 else peak * rng.uniform(0.4, 0.6))
        lines += [
            marker("CPU Use", start, end, {
                "type": "CPU", "cpuPercent": share, "nice": share, "user": share,
                "system": round(share * 0.1, 4), "iowait": share, "softirq": share,
                "steal": share, "user_pct": round(share * 0.9, 3),
                "system_pct": round(share * 0.1, 3), "idle_pct": round(1 - share, 3)}),
            marker("Memory", start, end, {
                "type": "Mem", "used": used, "available": memory * GIB - used,
                "cached": GIB, "buffers": 1 << 25, "swap": 0}),
            marker("IO", start, end, {"type": "IO", "read_bytes": rng.randint(0, 1 << 20),
                                      "read_count": 3, "write_bytes": rng.randint(0, 1 << 22),
                                      "write_count": 9}),
            marker("NetIO", start, end, {"type": "NetIO", "recv_bytes": rng.randint(0, 1 << 16),
                                         "recv_count": 40, "sent_bytes": 2000, "sent_count": 20}),
            marker("Task CPU", start, end, {"type": "TaskCPU", "cpu": round(task, 5),
                                            "processes": 12}),
            marker("Other CPU", start, end, {"type": "OtherCPU", "cpu": round(other, 5)}),
        ]
    if index % 3 == 2 and index % 500 == 2:
        lines.append(compact({"type": "marker", "name": "OOM kill",
                              "startTime": duration * 500.0, "category": 0,
                                 "data": {"type": "OOMKill", "kills": 1, "process": "eslint",
                                          "pid": 42, "cgroup": "/task"}}))
    lines.append(compact({"type": "footer", "endTime": duration * 1000.0,
                          "reason": "command-exited"}))
    return "\n".join(lines) + "\n"


def main():
    with open(sys.argv[1]) as f:
        template = json.loads(f.readline())
        thread = f.readline().rstrip("\n")
    out, count = sys.argv[2], int(sys.argv[3])
    rng = random.Random(39)
    start = 1_795_000_000_000.0
    for index in range(count):
        subdir = os.path.join(out, f"{index // 1000:02d}")
        os.makedirs(subdir, exist_ok=True)
        with open(os.path.join(subdir, f"task{index:06d}.jsonl"), "w") as f:
            f.write(task_log(template, thread, index, rng, start + index * 60_000.0))


if __name__ == "__main__":
    main()
