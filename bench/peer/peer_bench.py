"""The same loop plain, under trainscope, and under TraceML (the closest peer), interleaved.

    /usr/bin/python3 bench/peer/peer_bench.py TRAINSCOPE [rounds=5] [steps=1000] [step_ms=1]

Needs the benchmark's own venv, bench/peer/.venv (bench/peer/README.md makes it: traceml-ai from
PyPI, and PyTorch 2.x through a .pth pointing at the checkout's .venv). Never run in CI.
Per round, in a rotating order (so a drift of the machine's load hits every mode alike): the loop
(bench/peer/peer_loop.py, a host-bound CPU step of about `step_ms`) run
  plain:       python peer_loop.py
  trainscope:  trainscope run --no-profile --no-live -- python peer_loop.py
  traceml:     traceml run peer_loop.py --args ... --traceml   (its three lines in the loop)
Per run: the loop's median step (after 20 warm-up steps) and the whole run's wall time. Printed:
per mode the medians over the rounds, each tool's step ratio against plain (median of the
per-round ratios), and its wall time per run beyond plain's. Timings only; note the load average
(printed) beside any figure you keep.
"""
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv", "bin")
LOOP = os.path.join(HERE, "peer_loop.py")


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def bench_line(text):
    m = re.search(r"BENCH steps=(\d+) median_ms=([\d.]+) mean_ms=([\d.]+) cpu_us=([\d.]+)", text)
    return float(m.group(2)) if m else None


def one(mode, ts, spin, steps, work):
    py = os.path.join(VENV, "python")
    loop_args = ["--spin", str(spin), "--steps", str(steps)]
    if mode == "plain":
        cmd = [py, LOOP] + loop_args
    elif mode == "trainscope":
        cmd = [ts, "run", "--no-profile", "--no-live", "--no-store", "--out", os.path.join(work, "ts-%d" % time.time_ns()),
               "--", py, LOOP] + loop_args
    else:
        cmd = [os.path.join(VENV, "traceml"), "run", "--logs-dir", os.path.join(work, "traceml-%d" % time.time_ns()),
               LOOP, "--args"] + loop_args + ["--traceml"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=work, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    text = p.stdout + p.stderr
    if mode == "traceml" and bench_line(text) is None:  # its launcher keeps the script's stdout in its logs
        for f in glob.glob(os.path.join(work, "traceml-*", "*", "nodes", "*", "training.stdout.log")):
            text += open(f).read()
    median = bench_line(text)
    if p.returncode != 0 or median is None:
        sys.exit("peer_bench: the %s run failed (exit %d):\n%s" % (mode, p.returncode, text[-3000:]))
    for d in glob.glob(os.path.join(work, "traceml-*")):  # one run's logs at a time
        shutil.rmtree(d, ignore_errors=True)
    return median, wall


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ts = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    step_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    if not os.path.exists(os.path.join(VENV, "traceml")):
        sys.exit("peer_bench: no %s/traceml: make bench/peer/.venv first (bench/peer/README.md)" % VENV)
    out = subprocess.run([os.path.join(VENV, "python"), os.path.join(HERE, "..", "run", "overhead_loop.py"),
                          "--calibrate", str(step_ms)], capture_output=True, text=True, check=True).stdout
    spin = int(re.search(r"spin=(\d+)", out).group(1))
    modes = ["plain", "trainscope", "traceml"]
    res = {m: [] for m in modes}
    print("peer bench: %d rounds of %d steps, %.1f ms target (spin %d), load %s" % (rounds, steps, step_ms, spin,
                                                                                    loadavg()), flush=True)
    with tempfile.TemporaryDirectory(prefix="ts-peer-") as work:
        for r in range(rounds):
            order = modes[r % 3:] + modes[:r % 3]
            for m in order:
                res[m].append(one(m, ts, spin, steps, work))
            print("  round %d: %s" % (r + 1, ", ".join("%s %.3f ms %.1f s" % (m, res[m][-1][0], res[m][-1][1])
                                                         for m in modes)), flush=True)
    print("%-11s %10s %10s %12s %14s" % ("", "step", "ratio", "wall/run", "wall - plain"))
    plain_wall = statistics.median(w for _, w in res["plain"])
    for m in modes:
        ratio = statistics.median(res[m][i][0] / res["plain"][i][0] for i in range(rounds))
        wall = statistics.median(w for _, w in res[m])
        print("%-11s %7.3f ms %10.3f %10.1f s %+12.1f s" % (m, statistics.median(s for s, _ in res[m]), ratio, wall,
                                                          wall - plain_wall))
    ts_vs = statistics.median(res["traceml"][i][0] / res["trainscope"][i][0] for i in range(rounds))
    print("traceml / trainscope step: %.3f; load at end %s" % (ts_vs, loadavg()))


if __name__ == "__main__":
    main()
