#!/usr/bin/env python3
"""Builds a large real-shaped trace for the reader benchmark by repeating the events of a real
trace (tests/data/tb_resnet50_num_workers_0...) with every "ts" shifted past the previous copy.

The bytes of each event are kept as the profiler wrote them (indentation, key order, args), only
the ts numbers change, so the parser sees what it sees in a real multi-GB trace.

Usage: make_big_trace.py SOURCE.json[.gz] OUT.json MIN_MB
"""
import gzip
import re
import sys


def matching_bracket(text, open_at):
    """Index of the ']' closing the '[' at open_at (strings skipped)."""
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text[open_at:]):
        tok = m.group(0)
        if tok in "[{":
            depth += 1
        elif tok in "]}":
            depth -= 1
            if depth == 0:
                return open_at + m.start()
    raise ValueError("unbalanced traceEvents array")


def main():
    src, out, min_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(src, "rb") as f:
        magic = f.read(2)
    with (gzip.open if magic == b"\x1f\x8b" else open)(src, "rb") as f:
        text = f.read().decode("utf-8")
    start = text.index('"traceEvents"')
    start = text.index("[", start) + 1
    end = matching_bracket(text, start - 1)
    head, body, tail = text[:start], text[start:end].rstrip(), text[end:]
    ts_re = re.compile(r'("ts": *)(\d+)')
    stamps = [int(m.group(2)) for m in ts_re.finditer(body)]
    span = max(stamps) - min(stamps) + 1000
    copies = int(min_mb * 1e6 // len(text)) + 1
    with open(out, "w", encoding="utf-8") as f:
        f.write(head)
        for k in range(copies):
            shift = k * span
            if k:
                f.write(",")
                f.write(ts_re.sub(lambda m: m.group(1) + str(int(m.group(2)) + shift), body))
            else:
                f.write(body)
        f.write("\n")
        f.write(tail)
    print(f"{out}: {copies} copies of {len(text) / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
