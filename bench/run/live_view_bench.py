"""The live view's cost: the same loop under `trainscope run --live` and `--no-live`, in a terminal.

    /usr/bin/python3 bench/run/live_view_bench.py TRAINSCOPE PYTHON [pairs=8] [steps=1500] [step_ms=2]

Each run is `trainscope run --no-profile --live|--no-live -- PYTHON bench/run/overhead_loop.py` in a
pseudo-terminal of 120x40 (util-linux `script`), so the live view is drawn as on a user's screen.
Pairs run interleaved in ABBA order (a slow drift of the machine's load hits both modes alike).
Per run: the loop's median wall-clock step and its own CPU time per step (overhead_loop.py's
`median_ms`, `cpu_us`: the training process), and the CPU time of everything the run started
(trainscope, the loop, `script`) from getrusage(RUSAGE_CHILDREN) less the loop's own (its
`proc_cpu_ms`), per step: trainscope's CPU. Printed: per mode the medians over the runs, and
live/no-live ratios with the per-step delta. The live view lives in trainscope's process (4
renders a second, a redraw around each write of the job's output), so trainscope's CPU per step is
where its cost shows; the loop's own step should not move.
Timings only, never a test; note the load average (printed) beside any figure you keep.
"""
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def calibrate(python, step_ms):
    out = subprocess.run([python, os.path.join(HERE, "overhead_loop.py"), "--calibrate", str(step_ms)],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"spin=(\d+)", out).group(1))


def one(ts, python, mode, spin, steps):
    cmd = (f"stty rows 40 cols 120; exec {shlex.quote(ts)} run --no-profile --no-store {mode} -- "
           f"{shlex.quote(python)} {shlex.quote(os.path.join(HERE, 'overhead_loop.py'))} --spin {spin} --steps {steps}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, cwd="/tmp").stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"BENCH steps=(\d+) median_ms=([\d.]+) mean_ms=([\d.]+) cpu_us=([\d.]+) proc_cpu_ms=([\d.]+)", out)
    if not m:
        sys.exit(f"live_view_bench: no BENCH line from a {mode} run:\n{out[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    drawn = out.count("trainscope live")
    # Everything but the loop's process: trainscope (its sampler, the FIFO reader, the live view) and script.
    around = cpu - float(m.group(5)) / 1e3
    return {"median_ms": float(m.group(2)), "cpu_us": float(m.group(4)), "ts_cpu_us": around * 1e6 / steps,
            "panels": drawn}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ts, python = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 1500
    step_ms = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
    spin = calibrate(python, step_ms)
    print(f"live view bench: {pairs} pairs of {steps} steps, {step_ms} ms target (spin {spin}), load {loadavg()}",
          flush=True)
    runs = {"--live": [], "--no-live": []}
    for p in range(pairs):
        order = ["--live", "--no-live"] if p % 2 == 0 else ["--no-live", "--live"]
        for mode in order:
            runs[mode].append(one(ts, python, mode, spin, steps))
    if not all(r["panels"] > 0 for r in runs["--live"]) or any(r["panels"] for r in runs["--no-live"]):
        sys.exit("live_view_bench: the panel was not drawn in every --live run (or was in a --no-live one)")

    def med(mode, key):
        return statistics.median(r[key] for r in runs[mode])

    print(f"{'':>10} {'loop step':>11} {'loop CPU/step':>14} {'trainscope CPU/step':>20} {'panels drawn':>13}")
    for mode in runs:
        print(f"{mode:>10} {med(mode, 'median_ms'):>8.3f} ms {med(mode, 'cpu_us'):>11.1f} us "
              f"{med(mode, 'ts_cpu_us'):>17.1f} us {med(mode, 'panels'):>13.0f}")
    for key, unit in (("median_ms", "ms"), ("cpu_us", "us"), ("ts_cpu_us", "us")):
        a, b = med("--live", key), med("--no-live", key)
        print(f"ratio live/no-live {key:>10}: {a / b:.3f} (delta {a - b:+.3f} {unit} per step)")
    print(f"load at end {loadavg()}")


if __name__ == "__main__":
    main()
