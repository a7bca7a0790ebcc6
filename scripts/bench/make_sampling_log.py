#!/usr/bin/env python3
"""Stretch a real tc-profile log into a sampling run of any length.

Usage: make_sampling_log.py SOURCE_LOG SECONDS OUT

SOURCE_LOG is a short recording kept with `tc-profile run --keep-log`. Its
resource samples (category 0 interval markers: "CPU Use", "Memory", "IO",
"NetIO") are repeated, times shifted by the span they cover, until SECONDS
are filled; so the bytes per sample are exactly what the recorder writes.
The other lines (meta, thread, the Command interval) are kept, with the
Command's end and the footer moved to the new end.
"""
import json
import sys


def dump(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def is_sample(line):
    return line.get("type") == "marker" and line.get("category") == 0 and line.get("endTime") is not None


def main():
    source_path, seconds, out_path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with open(source_path) as f:
        raw_lines = f.readlines()
    lines = [json.loads(raw) for raw in raw_lines]
    samples = [(line, raw) for line, raw in zip(lines, raw_lines) if is_sample(line)]
    if not samples:
        sys.exit(f"{source_path}: no resource samples to repeat")
    first = samples[0][0]["startTime"]
    span = max(line["endTime"] for line, _ in samples) - first
    end = seconds * 1000.0

    with open(out_path, "w") as out:
        for line, raw in zip(lines, raw_lines):
            if line.get("type") in ("meta", "thread", "open"):
                out.write(raw)
        shift = 0.0
        while first + shift < end:
            for line, _ in samples:
                if line["startTime"] + shift >= end:
                    break
                line = dict(line, startTime=round(line["startTime"] + shift, 3),
                            endTime=round(line["endTime"] + shift, 3))
                out.write(dump(line))
            shift += span
        for line in lines:
            if line.get("type") == "marker" and "openId" in line:
                out.write(dump(dict(line, endTime=end)))
            elif line.get("type") == "footer":
                out.write(dump(dict(line, endTime=end)))


if __name__ == "__main__":
    main()
