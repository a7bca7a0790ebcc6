#!/usr/bin/env python3
"""Write a synthetic streamed-profile log (JSON Lines) of N markers.

Usage: make_log.py N OUT

Same shape as a real log: a meta line, one thread line with the empty
version-47 tables, then N marker lines. Compact JSON with "type" first
(the profiler sniffs the first bytes for {"type":"meta"). The mix of
instants, text intervals and numeric graph samples is deterministic so
runs are comparable.
"""
import json
import sys
import time


def dump(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def empty_table(*columns):
    table = {c: [] for c in columns}
    table["length"] = 0
    return table


def main():
    n, out_path = int(sys.argv[1]), sys.argv[2]
    meta = {
        "type": "meta",
        "startTime": time.time() * 1000.0,
        "interval": 100,
        "preprocessedProfileVersion": 47,
        "categories": [{"name": "Other", "color": "grey", "subcategories": ["Other"]}],
        "markerSchema": [],
    }
    samples = empty_table("stack", "time")
    samples.update(weightType="samples", weight=None)
    thread = {
        "type": "thread",
        "name": "x",
        "pid": "0",
        "tid": 0,
        "processType": "default",
        "isMainThread": True,
        "samples": samples,
        "stackTable": empty_table("frame", "prefix", "category", "subcategory"),
        "frameTable": empty_table("address", "category", "subcategory", "func", "line"),
        "funcTable": empty_table("isJS", "relevantForJS", "name", "resource", "fileName"),
        "resourceTable": empty_table("lib", "name", "host", "type"),
        "nativeSymbols": empty_table("libIndex", "address", "name", "functionSize"),
    }
    with open(out_path, "w") as out:
        out.write(dump(meta))
        out.write(dump(thread))
        for i in range(n):
            t = i * 10.0  # ms since meta.startTime, a sampler at 100 Hz
            kind = i % 4
            if kind == 0:  # instant: endTime null
                m = {"type": "marker", "name": "event", "startTime": t, "endTime": None,
                     "category": 0, "data": {"type": "Text", "text": f"event {i}"}}
            elif kind == 1:  # interval with a text payload
                m = {"type": "marker", "name": "step", "startTime": t, "endTime": t + 5.0,
                     "category": 0, "data": {"type": "Text", "text": f"step {i}"}}
            elif kind == 2:  # numeric graph sample
                m = {"type": "marker", "name": "CPU", "startTime": t, "endTime": t + 10.0,
                     "category": 0, "data": {"type": "CPU", "user": round(0.1 + (i % 7) / 10, 2),
                                             "system": 0.05, "iowait": 0.0}}
            else:
                m = {"type": "marker", "name": "Memory", "startTime": t, "endTime": t + 10.0,
                     "category": 0, "data": {"type": "Mem", "used": 1_000_000_000 + i,
                                             "available": 3_000_000_000 - i}}
            out.write(dump(m))


if __name__ == "__main__":
    main()
