#!/usr/bin/env python3
"""`tc-profile fleet DIR --json`'s aggregation, the Python way, from the same profiles.

Usage: fleet_baseline.py DIR CATALOG

json.load of every processed profile under DIR (one at a time), the few numbers of each
task kept (duration, the task's CPU p95 in cores and its average, the memory peak, OOM
kills, the machine), grouped by worker type: nearest-rank p50/p95/max, the idle share,
and the cheapest CATALOG type (name,cores,memory_gib,price_per_hour) whose cores cover
the p95 and memory the max at 75 %. Prints the groups as JSON on stdout.
"""
import csv
import json
import math
import os
import sys

HEADROOM = 0.75
MIN_TASKS = 20


def weighted_p95(samples):
    samples.sort()
    total = sum(w for _, w in samples)
    target, covered = 0.95 * total * (1 - 1e-9), 0.0
    for value, weight in samples:
        covered += weight
        if covered >= target:
            return value
    return samples[-1][0] if samples else None


def task_of(path):
    with open(path) as f:
        profile = json.load(f)
    meta = profile["meta"]
    task_cpu, cpu, peak, oom = [], [], None, 0
    for thread in profile["threads"]:
        strings, markers = thread["stringArray"], thread["markers"]
        for name, start, end, data in zip(markers["name"], markers["startTime"],
                                          markers["endTime"], markers["data"]):
            name = strings[name]
            if name == "Task CPU":
                task_cpu.append((data["cpu"], end - start))
            elif name == "CPU Use":
                cpu.append((data["user"], end - start))
            elif name == "Memory":
                used = data.get("peak", data["used"])
                peak = used if peak is None else max(peak, used)
            elif name == "OOM kill":
                oom += data.get("kills", 1)
    samples = task_cpu or cpu
    cores = meta.get("logicalCPUs")
    total = sum(w for _, w in samples)
    average = sum(v * w for v, w in samples) / total if total else None
    task = meta.get("tcProfile", {}).get("task", {})
    return {
        "group": task.get("workerType", "(none)"),
        "instance": task.get("instanceType"),
        "duration": (meta["profilingEndTime"] - meta["profilingStartTime"]) / 1000,
        "cores_p95": weighted_p95(samples) * cores if samples and cores else None,
        "idle": 1 - average if average is not None else None,
        "peak": peak, "oom": oom,
    }


def nearest_rank(values, q):
    values = sorted(values)
    return values[max(math.ceil(q * len(values)), 1) - 1] if values else None


def main():
    root, catalog_path = sys.argv[1], sys.argv[2]
    with open(catalog_path) as f:
        rows = [line for line in f if not line.startswith("#")]
    catalog = [{"name": r["name"], "cores": float(r["cores"]),
                "memory": float(r["memory_gib"]) * (1 << 30), "price": float(r["price_per_hour"])}
               for r in csv.DictReader(rows)]
    groups = {}
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".json"):
                task = task_of(os.path.join(directory, name))
                groups.setdefault(task["group"], []).append(task)
    report = []
    for key in sorted(groups):
        tasks = groups[key]
        cores = [t["cores_p95"] for t in tasks if t["cores_p95"] is not None]
        peaks = [t["peak"] for t in tasks if t["peak"] is not None]
        durations = [t["duration"] for t in tasks]
        weighted = [(t["idle"] * t["duration"], t["duration"]) for t in tasks if t["idle"] is not None]
        oom = sum(t["oom"] for t in tasks)
        group = {"key": key, "tasks": len(tasks),
                 "duration": [nearest_rank(durations, 0.5), nearest_rank(durations, 0.95), max(durations)],
                 "cores": [nearest_rank(cores, 0.5), nearest_rank(cores, 0.95), max(cores)],
                 "memory": [nearest_rank(peaks, 0.5), nearest_rank(peaks, 0.95), max(peaks)],
                 "idle": sum(a for a, _ in weighted) / sum(b for _, b in weighted),
                 "oom": oom, "recommendation": None}
        if len(tasks) >= MIN_TASKS and oom == 0:
            need_cores, need_memory = group["cores"][1] / HEADROOM, group["memory"][2] / HEADROOM
            fits = [c for c in catalog if c["cores"] >= need_cores and c["memory"] >= need_memory]
            if fits:
                group["recommendation"] = min(
                    fits, key=lambda c: (c["price"], c["cores"], c["memory"]))["name"]
        report.append(group)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
