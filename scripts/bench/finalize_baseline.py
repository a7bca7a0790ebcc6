#!/usr/bin/env python3
"""Turn a streamed-profile log into a processed profile, the Python way.

Usage: finalize_baseline.py LOG OUT

Mirrors what Mozilla's monitor and the Firefox Profiler's JSON Lines
importer do: json.loads every line (meta, then the thread, then markers),
build the thread's column-oriented markers table with a string table for
names, then one json.dump of {meta, libs, threads} to OUT.
Prints {"seconds","peak_rss_bytes","input_bytes","markers"}; peak RSS is
this whole process's ru_maxrss (interpreter included), seconds is wall time
from opening LOG to OUT being written and closed.
"""
import json
import os
import resource
import sys
import time


def main():
    log_path, out_path = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    with open(log_path) as f:
        meta = json.loads(f.readline())
        thread = json.loads(f.readline())
        strings, string_index = [], {}
        markers = {"data": [], "name": [], "startTime": [], "endTime": [],
                   "phase": [], "category": [], "length": 0}
        for line in f:
            line = json.loads(line)
            if line.get("type") != "marker":
                continue  # other line kinds carry no marker
            name = line["name"]
            if name not in string_index:
                string_index[name] = len(strings)
                strings.append(name)
            end = line.get("endTime")
            markers["data"].append(line.get("data"))
            markers["name"].append(string_index[name])
            markers["startTime"].append(line["startTime"])
            markers["endTime"].append(end)
            markers["phase"].append(0 if end is None else 1)  # 0 instant, 1 interval
            markers["category"].append(line.get("category", 0))
            markers["length"] += 1
    # the "type" tags are line kinds, not part of the profile objects
    meta.pop("type", None)
    thread.pop("type", None)
    thread["markers"] = markers
    thread["stringArray"] = strings
    with open(out_path, "w") as out:
        json.dump({"meta": meta, "libs": [], "threads": [thread]}, out)
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "seconds": round(seconds, 4),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "input_bytes": os.path.getsize(log_path),
        "markers": markers["length"],
    }))


if __name__ == "__main__":
    main()
