#!/usr/bin/env python3
"""End-to-end `trainscope analyze --json` on large traces against Python's json.load.

Two trace shapes, each made by repeating a real trace's events (make_big_trace.py) to at least
--mb MB, plain and gzipped (bench/data/, gitignored):
  resnet   the 2021-form ResNet-50 trace (tb_resnet50_num_workers_0): ~464 bytes of JSON per event
  recsys   the modern Kineto trace of hta_ns_resolution (many small CPU ops per kernel, like the
           recommender-model trace of issue 17): ~224 bytes per event, twice the events per MB
Every measured command is its own process; rounds are interleaved (each round runs every
command once, json.load included), and the figures are medians over the rounds. MB/s is of
uncompressed JSON; peak RSS is the process's (wait4), the largest over the rounds. Each command
starts --settle seconds after the last one ended (default 2): on a VM that hands freed memory
back to its host, a process started right after json.load freed 2.5 GB pays for the host's
reclaim (session 7 measured recsys .json at 0.52-0.75 s right after json.load and 0.52-0.58 s
3 s later). --settle 0 gives the back-to-back figures.

  bench/trace/analyze_bench.py [--build build] [--mb 500] [--rounds 3] [--shapes resnet,recsys]
                               [--settle 2] [--huge-gb 6]   # also one run on a >= 6 GB plain trace (not in CI)
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = {
    "resnet": "tests/data/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "recsys": "tests/data/hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
}
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def make(shape, mb, suffix=""):
    data = os.path.join(ROOT, "bench", "data")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(data, f"big_{shape}{suffix}.json")
    if not os.path.exists(path) or os.path.getsize(path) < mb * 1e6:
        print(f"making {path} (>= {mb} MB) ...", file=sys.stderr, flush=True)
        subprocess.run([PYTHON, os.path.join(ROOT, "bench/trace/make_big_trace.py"),
                        os.path.join(ROOT, SOURCES[shape]), path, str(mb)], check=True)
    return path


def gzipped(path):
    gz = path + ".gz"
    if not os.path.exists(gz) or os.path.getmtime(gz) < os.path.getmtime(path):
        print(f"gzip -6 {path} ...", file=sys.stderr, flush=True)
        with open(gz + ".tmp", "wb") as out:
            subprocess.run(["gzip", "-6", "-c", path], stdout=out, check=True)
        os.replace(gz + ".tmp", gz)
    return gz


def run(cmd):
    """(wall s, cpu s, peak RSS bytes) of one process; fails loudly on a non-zero exit."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, ru.ru_stime


def warm(paths):
    for p in paths:  # the page cache: measure parsing, not the disk
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default="resnet,recsys")
    ap.add_argument("--huge-gb", type=float, default=0)
    ap.add_argument("--settle", type=float, default=2.0, help="seconds between commands (0: back to back)")
    ap.add_argument("--serial", action="store_true", help="also --read-threads 1 on the plain .json")
    args = ap.parse_args()
    exe = next((e for e in (os.path.join(args.build, d, "trainscope") for d in ("bin", "src/cli", "."))
                if os.path.exists(e)), None)
    if not exe:
        raise SystemExit(f"no trainscope under {args.build} (bin/, src/cli/ or itself): build first")
    shapes = [s for s in args.shapes.split(",") if s]
    files = {s: make(s, args.mb) for s in shapes}
    gzs = {s: gzipped(p) for s, p in files.items()}
    cmds = {}
    for s in shapes:
        cmds[(s, "json")] = [exe, "-q", "analyze", "--json", files[s]]
        if args.serial:  # the serial reader (--read-threads 1) in the same rounds
            cmds[(s, "json1")] = [exe, "-q", "analyze", "--json", "--read-threads", "1", files[s]]
        cmds[(s, "gz")] = [exe, "-q", "analyze", "--json", gzs[s]]
        cmds[(s, "python")] = [PYTHON, "-c", "import json,sys; json.load(open(sys.argv[1],'rb'))", files[s]]
    load_before = open("/proc/loadavg").read().split()[:3]
    warm(list(files.values()) + list(gzs.values()))
    for c in cmds.values():  # warm-up round (not counted)
        if c[0] == exe:
            run(c)
    res = {k: [] for k in cmds}
    for r in range(args.rounds):
        for k, c in cmds.items():
            time.sleep(args.settle)
            res[k].append(run(c))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"load average before/after: {load_before} / {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores;"
          f" medians of {args.rounds} interleaved rounds, {args.settle:g} s between commands")
    print(f"{'input':<34} {'MB':>7} {'wall s':>7} {'MB/s':>7} {'cpu s':>7} {'sys s (min-max)':>15} {'x json.load':>11}"
          f" {'peak RSS MB':>11} {'RSS/file':>8}")
    for s in shapes:
        size = os.path.getsize(files[s])
        py = statistics.median(r[0] for r in res[(s, "python")])
        for form in ("json", "json1", "gz", "python"):
            rows = res.get((s, form))
            if not rows:
                continue
            wall = statistics.median(r[0] for r in rows)
            cpu = statistics.median(r[1] for r in rows)
            rss = max(r[2] for r in rows)
            sys_s = f"{min(r[3] for r in rows):.2f}-{max(r[3] for r in rows):.2f}"
            name = {"json": f"{s} .json", "json1": f"{s} .json --read-threads 1", "gz": f"{s} .json.gz",
                    "python": f"{s} .json python json.load"}[form]
            ratio = f"{py / wall:.1f}x" if form != "python" else "1x"
            print(f"{name:<34} {size / 1e6:7.0f} {wall:7.3f} {size / 1e6 / wall:7.0f} {cpu:7.3f} {sys_s:>15} {ratio:>11}"
                  f" {rss / 1e6:11.0f} {rss / size:8.2f}")
        if args.serial:
            w1 = statistics.median(r[0] for r in res[(s, "json1")])
            wn = statistics.median(r[0] for r in res[(s, "json")])
            print(f"{s}: default threads / --read-threads 1 wall: {w1 / wn:.2f}x faster")
    if args.huge_gb:
        huge = make(shapes[-1], args.huge_gb * 1000, "_huge")
        warm([huge])
        time.sleep(args.settle)
        wall, cpu, rss, _ = run([exe, "-q", "analyze", "--json", huge])
        size = os.path.getsize(huge)
        print(f"huge {shapes[-1]} .json {size / 1e9:.2f} GB: wall {wall:.2f} s ({size / 1e6 / wall:.0f} MB/s), "
              f"cpu {cpu:.2f} s, peak RSS {rss / 1e9:.2f} GB ({rss / size:.2f}x the file)")


if __name__ == "__main__":
    main()
