#!/usr/bin/env python3
"""Independent reference for the reader tests: parses a trace with Python's json module and
prints what read_trace must find (events per category, some exact values). Stdlib only.

Usage: reference_counts.py TRACE.json[.gz]
"""
import collections
import decimal
import gzip
import json
import sys

CATS = {
    "cpu_op": "cpu_op", "operator": "cpu_op", "kernel": "kernel", "cuda_runtime": "cuda_runtime",
    "runtime": "cuda_runtime", "cuda_driver": "cuda_driver", "driver": "cuda_driver",
    "gpu_memcpy": "gpu_memcpy", "memcpy": "gpu_memcpy", "gpu_memset": "gpu_memset", "memset": "gpu_memset",
    "user_annotation": "user_annotation", "gpu_user_annotation": "gpu_user_annotation",
    "python_function": "python_function", "cuda_sync": "cuda_sync",
    "cpu_instant_event": "cpu_instant_event", "overhead": "overhead", "trace": "trace",
    "ac2g": "ac2g", "async_cpu_to_gpu": "ac2g", "async": "ac2g", "fwdbwd": "fwdbwd",
}


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        # Decimal keeps the exact text of ts/dur (16-digit epoch microseconds with fractions).
        return json.load(f, parse_float=decimal.Decimal)


def main():
    doc = load(sys.argv[1])
    bare = isinstance(doc, list)
    events = doc if bare else doc["traceEvents"]
    cats = collections.Counter()
    n = 0
    ts_sum = 0
    for e in events:
        if "ph" not in e:
            continue
        n += 1
        cat = e.get("cat")
        c = CATS.get(cat.lower(), "other") if isinstance(cat, str) and cat else "unknown"
        if e.get("name") == "[memory]":
            c = "memory"
        elif c == "unknown" and bare and e["ph"] == "X":
            c = "cpu_op"
        cats[c] += 1
        ts = e.get("ts")
        if ts is not None:
            ts_sum += int((decimal.Decimal(str(ts)) * 1000).to_integral_value(decimal.ROUND_HALF_UP))
    print("events", n)
    for k in sorted(cats):
        print("cat", k, cats[k])
    print("ts_ns_sum", ts_sum)
    if not bare:
        print("baseTimeNanoseconds", doc.get("baseTimeNanoseconds", 0))


if __name__ == "__main__":
    main()
