"""`scripts/gpu-check`: everything the GPU validation (issue #16) measures, in one command run from the
unpacked release bundle on a GPU machine. Stdlib only: the interpreter running this need not have torch;
the workloads run under the Python that has it (--python, $TRAINSCOPE_PYTHON, python3, /usr/bin/python3).

Results go to OUTDIR: summary.json (schema trainscope.gpu-check/1, one entry per stage, updated in place
when a stage is run alone) plus at most a few tars (traces of every example, torch2 traces, the logs of
every command), never more than MAX_FILES files of MAX_FILE_BYTES each, nothing in sub-folders.
Each stage stops starting new work once STAGE_BUDGET_S is spent, so it finishes within 9 minutes;
--budget SECONDS caps the whole run the same way (a device command has 10 minutes for all its stages).
lanes.py lays the stages out for that budget: the ones that measure time alone, the others in two lanes.
On a machine without a GPU every stage runs what it can and lists what it skipped and why.
"""
import argparse
import csv
import glob
import gzip
import io
import json
import os
import re
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "trainscope.gpu-check/1"
import lanes  # noqa: E402  (next to this file)

STAGES = list(lanes.ORDER)
STAGE_BUDGET_S = 8 * 60 + 30   # issue #15: each stage under 9 minutes; 30 s kept for writing results
MAX_FILES = 8                  # issue #15: at most 8 files of at most 16 MiB in OUTDIR
MAX_FILE_BYTES = 16 * 1024 * 1024
HERE = os.path.dirname(os.path.abspath(__file__))

# examples/README.md: the finding each example plants, and whether a CPU-only machine shows it.
EXAMPLES = [
    ("data_starved.py", "dataloader-starvation", True),
    ("cpu_bound_transforms.py", "cpu-bound-transforms", True),
    ("host_sync.py", "host-sync", False),
    ("growing_memory.py", "memory-growth", True),
    ("checkpoint_every_step.py", "in-loop-io", True),
    ("launch_bound.py", "launch-bound", False),
    ("unfused_optimizer.py", "unfused-optimizer", False),
    ("fp32_on_gpu.py", "fp32-gemm", False),
    ("pageable_copies.py", "pageable-memcpy", False),
    ("healthy.py", None, True),
]
# Findings about the machine rather than the script (as tests/run/examples_test.cpp treats them).
ENVIRONMENT_FINDINGS = {"thread-oversubscription", "openblas-on-intel"}
# Two stages, so that each stays under 9 minutes with compilation in it.
TORCH2_CASES = {"torch2-compile": ["compile_default", "compile_reduce_overhead", "compile_aot_eager",
                                   "compile_cudagraphs"],
                "torch2-eager": ["cuda_graph", "bf16_autocast", "fused_adamw"]}
# nvidia-smi --query-gpu fields (nvidia-smi --help-query-gpu) next to the snapshot --json field they check.
SMI_FIELDS = [
    ("index", None), ("name", None), ("driver_version", None),
    ("utilization.gpu", "util_pct"), ("utilization.memory", "mem_util_pct"),
    ("memory.used", "mem_used_mib"), ("memory.total", "mem_total_mib"),
    ("temperature.gpu", "temp_c"), ("power.draw", "power_w"),
    ("clocks.sm", "sm_clock_mhz"), ("clocks.mem", "mem_clock_mhz"),
    ("clocks_event_reasons.active", "clock_reasons_bits"),
    ("pcie.link.gen.current", "pcie_gen"), ("pcie.link.width.current", "pcie_width"),
]
# How far a trainscope reading may sit from nvidia-smi's, read within the same second, and still agree:
# quantities that do not move between two reads (memory, clocks at a fixed P-state, link) must match
# closely; utilisation and power are averages over different windows and move under load.
TOLERANCE = {"mem_used_mib": 64, "mem_total_mib": 1, "temp_c": 2, "power_w": 50, "sm_clock_mhz": 100,
             "mem_clock_mhz": 100, "util_pct": 25, "mem_util_pct": 25, "pcie_gen": 0, "pcie_width": 0}


SAY_LOCK = threading.Lock()


def say(text):
    """One line on stdout, whole: two lanes' stages print at once."""
    with SAY_LOCK:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


class Stage:
    """One stage's record: what it found, what it skipped, whether anything failed."""

    def __init__(self, name, ctx, lane="alone", cores=None):
        self.name, self.ctx = name, ctx
        self.lane, self.cores = lane, cores  # cores: the CPU ids its commands are pinned to (None: all)
        self.t0 = time.monotonic()
        self.data = {}
        self.found, self.skipped, self.failed = [], [], []

    def left(self):
        now = time.monotonic()
        return min(STAGE_BUDGET_S - (now - self.t0), self.ctx.deadline - now)

    def say(self, kind, text):
        say("[%s] %s: %s" % (self.name, kind, text))

    def find(self, text):
        self.found.append(text)
        self.say("found", text)

    def skip(self, text):
        self.skipped.append(text)
        self.say("skipped", text)

    def fail(self, text):
        self.failed.append(text)
        self.say("FAILED", text)

    def record(self):
        status = "fail" if self.failed else ("skipped" if not self.found and self.skipped else
                                             ("partial" if self.skipped else "pass"))
        now = time.monotonic()
        return {"status": status, "duration_s": round(now - self.t0, 1), "found": self.found,
                "skipped": self.skipped, "failed": self.failed, "data": self.data, "lane": self.lane,
                "cores": lanes.core_text(self.cores) if self.cores else "all",
                "started_s": round(self.t0 - self.ctx.t0, 1), "ended_s": round(now - self.ctx.t0, 1)}

    def run(self, argv, log, timeout=None, env=None, cwd=None, background=False):
        """Runs argv: stdout to the stage's log LOG, stderr (after the command line) to LOG.stderr.
        Returns (rc, stdout text), or the Popen when BACKGROUND (its .log_path is the stdout file)."""
        path = os.path.join(self.ctx.logs, self.name, log)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        full_env = dict(os.environ)
        full_env.update(env or {})
        if self.cores and self.ctx.taskset:  # the lane's cores, for the command and every child it starts
            argv = [self.ctx.taskset, "-c", lanes.core_text(self.cores)] + list(argv)
        f, e = open(path, "w"), open(path + ".stderr", "w")
        e.write("$ %s\n" % " ".join(argv))
        e.flush()
        p = subprocess.Popen(argv, stdout=f, stderr=e, env=full_env, cwd=cwd, start_new_session=True)
        p.log_path = path
        if background:
            p.log_files = (f, e)
            return p
        limit = max(5, min(timeout or self.left(), self.left()))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            kill_group(p)
            rc = 124
            e.write("\n[gpu-check: killed after %.0f s]\n" % limit)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU seconds of the children reaped meanwhile: this command (background ones are reaped later).
        self.last_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        f.close()
        e.close()
        with open(path, errors="replace") as r:
            return rc, r.read()


def finish(p, timeout=None):
    """Waits for (or, with no TIMEOUT, stops) a background command; returns its stdout text."""
    try:
        if timeout is None:
            raise subprocess.TimeoutExpired(p.args, 0)
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
    for fh in p.log_files:
        fh.close()
    with open(p.log_path, errors="replace") as r:
        return r.read()


def kill_group(p):
    try:
        os.killpg(p.pid, 15)
        p.wait(timeout=10)
    except Exception:
        try:
            os.killpg(p.pid, 9)
            p.wait(timeout=10)
        except Exception:
            pass


class Context:
    def __init__(self, args):
        self.bundle = args.bundle
        self.out = os.path.abspath(args.outdir)
        self.ts = os.path.join(self.bundle, "bin", "trainscope")
        self.share = os.path.join(self.bundle, "share", "trainscope")
        self.examples = os.path.join(self.share, "examples")
        self.work = tempfile.mkdtemp(prefix="gpu-check-")
        self.logs = os.path.join(self.work, "logs")
        # Runs, lab and max-batch record into this store, not the user's ~/.local/share one.
        self.store = os.path.join(self.work, "trainscope.db")
        self.python = args.python
        self.quick = args.quick
        # --budget: the whole run's time; each stage's own budget still applies within it.
        self.t0 = time.monotonic()
        self.deadline = self.t0 + (args.budget if args.budget else float("inf"))
        self.lock = threading.Lock()  # two lanes write summary.json and logs.tar.gz
        self.taskset = shutil.which("taskset")
        self.gpus = []
        self.cuda = False
        self.torch = None


def json_output(st, out, what, rc):
    """The JSON a `--json` command printed, or None after one failure line saying it printed none."""
    try:
        return json.loads(out)
    except ValueError:
        st.fail("%s --json printed no JSON (exit %s)" % (what, rc))
        return None


def find_python(explicit):
    cands = [explicit] if explicit else [os.environ.get("TRAINSCOPE_PYTHON"), shutil.which("python3"),
                                         "/usr/bin/python3"]
    for c in cands:
        if not c:
            continue
        try:
            r = subprocess.run([c, "-c", "import json, torch; print(json.dumps({'torch': torch.__version__, "
                                "'cuda': torch.cuda.is_available(), 'cuda_version': torch.version.cuda, "
                                "'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]"
                                " if torch.cuda.is_available() else []}))"],
                               capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and r.stdout.strip():
            return c, json.loads(r.stdout.strip().splitlines()[-1])
    return None, None


def nvidia_smi_gpus():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi not found"
    try:
        r = subprocess.run([smi, "--query-gpu=index,name,driver_version,uuid", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "nvidia-smi: %s" % e
    if r.returncode != 0:
        return None, "nvidia-smi exited %d: %s" % (r.returncode, (r.stdout + r.stderr).strip()[:200])
    rows = [[c.strip() for c in line.split(",")] for line in r.stdout.strip().splitlines() if line.strip()]
    return [{"index": int(x[0]), "name": x[1], "driver": x[2], "uuid": x[3]} for x in rows if len(x) >= 4], None


def smi_query(fields):
    """One nvidia-smi reading of FIELDS per GPU: ([{field: text}], unix time of the read)."""
    t = time.time()
    r = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
                       capture_output=True, text=True, timeout=60)
    rows = []
    for line in r.stdout.strip().splitlines():
        vals = [v.strip() for v in next(csv.reader([line]))]
        rows.append(dict(zip(fields, vals)))
    return rows, t, r.returncode, r.stderr.strip()


def number(text):
    try:
        text = str(text).strip()
        return int(text, 16) if text.lower().startswith("0x") else float(text)
    except (TypeError, ValueError):
        return None  # "[N/A]", "[Not Supported]"


def snapshot_values(g):
    """The snapshot --json GPU object's readings in nvidia-smi's units."""
    r = g.get("reading", g)
    v = {k: r.get(k) for k in ("util_pct", "mem_util_pct", "temp_c", "power_w", "sm_clock_mhz", "mem_clock_mhz",
                               "pcie_gen", "pcie_width", "sm_active_pct", "tensor_active_pct")}
    for src, dst in (("mem_used_bytes", "mem_used_mib"), ("mem_total_bytes", "mem_total_mib")):
        v[dst] = r[src] / 1048576 if isinstance(r.get(src), (int, float)) else None
    cr = r.get("clock_reasons")
    v["clock_reasons_bits"] = cr.get("bits") if isinstance(cr, dict) else None
    v["clock_reasons"] = cr.get("names") if isinstance(cr, dict) else None
    return v


def gpu_objects(snap):
    # snapshot --json: {"nvml": {"available", "driver_version"}, "gpus": [...], "host": {...}}
    return snap.get("gpus") or []


# ---------------------------------------------------------------------------------------------- stages

def stage_env(st, ctx):
    rc, out = st.run([ctx.ts, "--version"], "version.txt", timeout=30)
    st.data["trainscope_version"] = out.splitlines()[-1] if rc == 0 else None
    if rc != 0:
        st.fail("bin/trainscope --version exited %d" % rc)
    info = os.path.join(ctx.share, "BUILDINFO")
    if os.path.exists(info):
        st.data["buildinfo"] = dict(l.split(": ", 1) for l in open(info).read().splitlines() if ": " in l)
    st.data["host"] = {"hostname": socket.gethostname(), "kernel": os.uname().release,
                       "glibc": os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None,
                       "cpus": os.cpu_count()}
    st.data["python"] = ctx.python
    st.data["torch"] = ctx.torch
    st.data["gpus_nvidia_smi"] = ctx.gpus
    if ctx.python:
        st.find("python %s: torch %s, CUDA %s" % (ctx.python, ctx.torch["torch"],
                                                 "available: " + ", ".join(ctx.torch["devices"]) if ctx.cuda
                                                 else "not available"))
    else:
        st.fail("no Python with torch found (pass --python or set TRAINSCOPE_PYTHON)")
    if ctx.gpus:
        st.find("nvidia-smi: %s, driver %s" % (", ".join(g["name"] for g in ctx.gpus), ctx.gpus[0]["driver"]))
    else:
        st.skip("GPU facts: %s" % ctx.gpu_error)
    argv = [ctx.ts, "doctor", "--json"] + (["--python", ctx.python] if ctx.python else [])
    rc, out = st.run(argv, "doctor.json", timeout=180)
    try:
        doc = json.loads(out)
        checks = doc.get("checks", [])
        st.data["doctor"] = {"exit": rc, "checks": [{k: c.get(k) for k in ("id", "status", "summary")}
                                                    for c in checks]}
        counts = {}
        for c in checks:
            counts[c.get("status")] = counts.get(c.get("status"), 0) + 1
        st.find("doctor: %s" % ", ".join("%d %s" % (n, s) for s, n in sorted(counts.items())))
    except (ValueError, AttributeError) as e:
        st.fail("doctor --json did not print JSON (exit %d): %s" % (rc, e))


def smi_time(text):
    """nvidia-smi's timestamp field ("2026/11/24 00:22:29.123", local time) as Unix seconds."""
    try:
        base, _, frac = text.strip().partition(".")
        return time.mktime(time.strptime(base, "%Y/%m/%d %H:%M:%S")) + float("0." + (frac or "0"))
    except ValueError:
        return None


def smi_csv_rows(text, fields):
    """nvidia-smi --query-gpu=timestamp,FIELDS --format=csv,noheader,nounits output as rows ({field: text},
    "_t": Unix seconds); lines of another width (a warning, a cut-off last line) are left out."""
    rows = []
    for line in text.splitlines():
        vals = [v.strip() for v in next(csv.reader([line]))] if line.strip() else []
        if len(vals) == len(fields) + 1:
            row = dict(zip(fields, vals[1:]))
            row["_t"] = smi_time(vals[0])
            rows.append(row)
    return rows


def bracketing_rows(rows, t):
    """Per GPU index, the nvidia-smi rows read last before T and first after it: (before, after), either
    None where nvidia-smi has no row on that side."""
    out = {}
    for row in rows:
        if row.get("_t") is None:
            continue
        idx = int(number(row.get("index")) or 0)
        before, after = out.get(idx, (None, None))
        if row["_t"] <= t and (before is None or row["_t"] > before["_t"]):
            before = row
        elif row["_t"] > t and (after is None or row["_t"] < after["_t"]):
            after = row
        out[idx] = (before, after)
    return out


def field_agrees(key, mine, theirs):
    if key == "clock_reasons_bits":
        return int(theirs) == int(mine)
    return abs(mine - theirs) <= TOLERANCE.get(key, 0)


def compare_snapshot(ours, before, after):
    """Each snapshot reading (snapshot_values) against the nvidia-smi rows on both sides of its read.

    A reading agrees when it matches either row: NVML's values are read within a few milliseconds, and a
    GPU that changes state between two nvidia-smi rows (boost to idle: SM clock 1980 -> 420 MHz, clock
    event reasons 0 -> GpuIdle) has read one way before and the other after. Returns {key: entry} with
    the rows' values, "agree" and "agrees_with" (before, after or both)."""
    fields = {}
    for f, key in SMI_FIELDS:
        if key is None:
            continue
        mine = ours.get(key)
        sides = {}
        for side, row in (("before", before), ("after", after)):
            if row is not None:
                name = f if f in row else f.replace("clocks_event_reasons", "clocks_throttle_reasons")
                sides[side] = row.get(name)
        readable = {k: number(v) for k, v in sides.items() if number(v) is not None}
        entry = {"nvidia_smi_" + k: v for k, v in sides.items()}
        entry["trainscope"] = mine
        if readable and isinstance(mine, (int, float)):
            agree = [k for k, v in readable.items() if field_agrees(key, mine, v)]
            near = min(readable.values(), key=lambda v: abs(mine - v))
            entry["nvidia_smi"] = sides[agree[0] if agree else min(readable, key=lambda k: abs(mine - readable[k]))]
            if key != "clock_reasons_bits":
                entry["diff"] = round(mine - near, 3)
            entry["agree"] = bool(agree)
            entry["agrees_with"] = "both" if len(agree) == 2 else (agree[0] if agree else None)
        elif readable and mine is None:
            entry["nvidia_smi"] = next(iter(sides.values()))
            entry["agree"] = False
        fields[key] = entry
    return fields


def stage_snapshot(st, ctx):
    # nvidia-smi samples every 200 ms around the snapshot; each reading is compared with the rows on both
    # sides of the snapshot's own timestamp, so both come from the same fraction of a second.
    fields = [f for f, _ in SMI_FIELDS]
    if ctx.gpus and smi_query(fields)[2] != 0:  # drivers before 535 call it clocks_throttle_reasons
        fields = [f.replace("clocks_event_reasons", "clocks_throttle_reasons") for f in fields]
    smi = None
    if ctx.gpus:
        smi = st.run(["nvidia-smi", "--query-gpu=timestamp," + ",".join(fields), "--format=csv,noheader,nounits",
                      "-lms", "200"], "nvidia-smi.csv", background=True)
        time.sleep(1.0)
    rc, out = st.run([ctx.ts, "snapshot", "--json"], "snapshot.json", timeout=60)
    smi_rows = []
    if smi is not None:
        time.sleep(1.0)
        smi_rows = smi_csv_rows(finish(smi), fields)
    snap = json_output(st, out, "snapshot", rc)
    if snap is None:
        return
    st.data["snapshot_unix_ms"] = snap.get("unix_ms")
    st.data["nvml"] = {k: v for k, v in (snap.get("nvml") or {}).items() if k != "gpus"}
    if not ctx.gpus:
        st.find("snapshot --json works without a GPU (nvml available: %s)" % (snap.get("nvml") or {}).get("available"))
        st.skip("comparison with nvidia-smi: %s" % ctx.gpu_error)
        return
    t_snap = (snap.get("unix_ms") or 0) / 1000.0
    around = bracketing_rows(smi_rows, t_snap)
    gaps = {idx: [round((r["_t"] - t_snap) * 1000) if r else None for r in pair] for idx, pair in around.items()}
    st.data["nvidia_smi_minus_snapshot_ms"] = [gaps[k] for k in sorted(gaps)]
    same_second = bool(gaps) and all(g is not None and abs(g) < 1000 for pair in gaps.values() for g in pair)
    st.data["same_second"] = same_second
    if not same_second:
        st.fail("no nvidia-smi reading within one second on both sides of the snapshot (gaps %s ms)" % gaps)
    gpus = gpu_objects(snap)
    comparisons = []
    for idx in sorted(around):
        before, after = around[idx]
        g = next((g for g in gpus if g.get("index") == idx), None)
        if g is None:
            st.fail("GPU %d: nvidia-smi lists it, snapshot does not" % idx)
            continue
        ours = snapshot_values(g)
        cmp_ = {"index": idx, "name": (before or after).get("name"), "fields": compare_snapshot(ours, before, after)}
        for key, e in cmp_["fields"].items():
            if e.get("agree") is False:
                st.fail("GPU %d %s: trainscope %s, nvidia-smi %s before and %s after" % (
                    idx, key, e["trainscope"], e.get("nvidia_smi_before"), e.get("nvidia_smi_after")))
        cmp_["gpm"] = {"sm_active_pct": ours.get("sm_active_pct"), "tensor_active_pct": ours.get("tensor_active_pct"),
                       "supported": g.get("gpm_supported")}
        cmp_["clock_reasons"] = ours.get("clock_reasons")
        comparisons.append(cmp_)
        judged = [e for e in cmp_["fields"].values() if "agree" in e]
        only_after = [k for k, e in cmp_["fields"].items() if e.get("agrees_with") == "after"]
        only_before = [k for k, e in cmp_["fields"].items() if e.get("agrees_with") == "before"]
        st.find("GPU %d (%s): %d of %d readings agree with an nvidia-smi row on either side of the snapshot "
                "(gaps %s ms)%s" % (idx, cmp_["name"], sum(1 for e in judged if e["agree"]), len(judged), gaps[idx],
                                    "; only with the row after: %s; only with the row before: %s (the GPU changed "
                                    "state between them)" % (", ".join(only_after) or "none",
                                                             ", ".join(only_before) or "none")
                                    if only_after or only_before else ""))
    st.data["gpus"] = comparisons


WATCH_SMI_FIELDS = ["index", "utilization.gpu", "memory.used", "power.draw", "clocks.sm"]
# nvidia-smi's utilization.gpu and trainscope's util_pct both come from NVML's nvmlDeviceGetUtilizationRates
# (the percent of a past sample period in which a kernel ran); read over the same seconds, their means
# may differ only by where the two sampling grids fall: a few points.
WATCH_UTIL_MEAN_TOLERANCE = 5


def watch_ticks(jsonl_text):
    """`watch --json` lines as {gpu index: [(Unix seconds, util_pct)]}."""
    ticks = {}
    for line in jsonl_text.splitlines():
        if not line.startswith("{"):
            continue
        tick = json.loads(line)
        for g in gpu_objects(tick):
            u = snapshot_values(g).get("util_pct")
            if isinstance(u, (int, float)) and tick.get("unix_ms") is not None:
                ticks.setdefault(g.get("index", 0), []).append((tick["unix_ms"] / 1000.0, u))
    return ticks


def compare_watch_util(ticks, smi_rows, interval_s=0.5):
    """trainscope's utilisation ticks [(t, pct)] against nvidia-smi's rows of the same GPU over the same
    seconds: the nvidia-smi rows read from half an interval before the first tick to half an interval
    after the last. Compares the two means and each tick with the nvidia-smi row nearest it (within half
    an interval; TOLERANCE apart at most). Not against a constant: how busy a loop keeps the GPU is the
    loop's business (it may still be warming up), what must hold is that both read the same."""
    if not ticks:
        return {"agree": None, "why": "no trainscope tick with a utilisation"}
    lo, hi = ticks[0][0] - interval_s / 2, ticks[-1][0] + interval_s / 2
    theirs = [(r["_t"], number(r.get("utilization.gpu"))) for r in smi_rows
              if r.get("_t") is not None and lo <= r["_t"] <= hi and number(r.get("utilization.gpu")) is not None]
    if not theirs:
        return {"agree": None, "why": "no nvidia-smi row within the ticks' seconds"}
    paired = agreeing = 0
    for t, u in ticks:
        tn, un = min(theirs, key=lambda r: abs(r[0] - t))
        if abs(tn - t) <= interval_s / 2:
            paired += 1
            agreeing += abs(u - un) <= TOLERANCE["util_pct"]
    mine = statistics.mean(u for _, u in ticks)
    smi = statistics.mean(u for _, u in theirs)
    return {"ticks": len(ticks), "nvidia_smi_rows": len(theirs), "trainscope_mean": round(mine, 1),
            "nvidia_smi_mean": round(smi, 1), "diff": round(mine - smi, 1), "ticks_paired": paired,
            "ticks_agreeing": agreeing, "nvidia_smi_max": max(u for _, u in theirs),
            "agree": abs(mine - smi) <= WATCH_UTIL_MEAN_TOLERANCE}


def watch_phase(st, ctx, label, seconds, load):
    """Records `watch --json` for SECONDS (under a bf16 matmul loop when LOAD) beside nvidia-smi -lms 500."""
    db = os.path.join(ctx.work, "watch-%s.db" % label)
    loop = None
    if load:
        loop = st.run([ctx.python, os.path.join(HERE, "matmul_loop.py"), str(seconds + 8)], "matmul-%s.txt" % label,
                      background=True)
        time.sleep(5)  # past the cuBLAS warm-up
    smi = None
    if ctx.gpus:
        smi = st.run(["nvidia-smi", "--query-gpu=timestamp," + ",".join(WATCH_SMI_FIELDS),
                      "--format=csv,noheader,nounits", "-lms", "500"], "nvidia-smi-%s.csv" % label, background=True)
    rc, out = st.run([ctx.ts, "watch", "--json", "--interval", "500ms", "--duration", str(seconds), "--record", db],
                     "watch-%s.jsonl" % label, timeout=seconds + 60)
    smi_out = finish(smi) if smi is not None else ""
    loop_out = finish(loop, timeout=30) if loop is not None else ""
    if rc != 0:
        st.fail("watch (%s) exited %d" % (label, rc))
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    res = {"ticks": len(lines), "seconds": seconds, "exit": rc,
           # The sampler's cost: trainscope watch's whole CPU time (start-up included) per tick.
           "trainscope_cpu_ms_per_tick": round(st.last_cpu_s * 1000 / len(lines), 3) if lines else None}
    per_key = {}
    for l in lines:
        for g in gpu_objects(l):
            v = snapshot_values(g)
            for k in ("util_pct", "sm_active_pct", "tensor_active_pct", "power_w", "sm_clock_mhz"):
                if isinstance(v.get(k), (int, float)):
                    per_key.setdefault(k, []).append(v[k])
    res["trainscope_mean"] = {k: round(statistics.mean(v), 1) for k, v in per_key.items()}
    if smi is not None:
        rows = smi_csv_rows(smi_out, WATCH_SMI_FIELDS)
        ticks = watch_ticks(out)
        res["util_vs_nvidia_smi"] = {str(idx): compare_watch_util(
            t, [r for r in rows if int(number(r.get("index")) or 0) == idx]) for idx, t in sorted(ticks.items())}
        means = [c["nvidia_smi_mean"] for c in res["util_vs_nvidia_smi"].values() if "nvidia_smi_mean" in c]
        res["nvidia_smi_util_mean"] = round(statistics.mean(means), 1) if means else None  # over the same seconds
    try:
        con = sqlite3.connect(db)
        res["recorded_rows"] = {t: con.execute("select count(*) from %s" % t).fetchone()[0]
                                for t in ("gpu_samples", "host_samples")}
        con.close()
    except sqlite3.Error as e:
        res["recorded_rows"] = "unreadable: %s" % e
        st.fail("watch --record %s: %s" % (label, e))
    if loop is not None:
        m = re.search(r"MATMUL .*", loop_out)
        res["matmul"] = m.group(0) if m else None
    return res


def judge_watch_util(st, label, res):
    for idx, c in (res.get("util_vs_nvidia_smi") or {}).items():
        if c.get("agree") is None:
            st.skip("GPU %s utilisation (%s) against nvidia-smi: %s" % (idx, label, c.get("why")))
        elif c["agree"]:
            st.find("GPU %s utilisation (%s): trainscope %.1f%%, nvidia-smi %.1f%% over the same seconds; %d of %d "
                    "ticks agree with the nvidia-smi row beside them" % (idx, label, c["trainscope_mean"],
                                                                        c["nvidia_smi_mean"], c["ticks_agreeing"],
                                                                        c["ticks_paired"]))
        else:
            st.fail("GPU %s utilisation (%s): trainscope %.1f%%, nvidia-smi %.1f%% over the same seconds (more than %d "
                    "points apart)" % (idx, label, c["trainscope_mean"], c["nvidia_smi_mean"],
                                       WATCH_UTIL_MEAN_TOLERANCE))


def stage_watch(st, ctx):
    secs = 4 if ctx.quick else 15
    if not ctx.gpus:
        res = watch_phase(st, ctx, "idle", secs, load=False)
        st.data["idle"] = res
        st.find("watch recorded %d ticks at idle on a CPU-only host (%s)" % (res["ticks"], res.get("recorded_rows")))
        st.skip("watch under a bf16 matmul loop, GPM SM/tensor activity and nvidia-smi comparison: %s" % ctx.gpu_error)
        return
    if not ctx.cuda:
        st.skip("watch under load: %s has no CUDA" % ctx.python)
    else:
        load = watch_phase(st, ctx, "load", secs, load=True)
        st.data["load"] = load
        st.find("under bf16 matmul: trainscope %s, nvidia-smi util mean %s over the same seconds (%s)" %
                (load["trainscope_mean"], load.get("nvidia_smi_util_mean"), load.get("matmul")))
        judge_watch_util(st, "under load", load)
    time.sleep(5)  # let the clocks and utilisation settle
    idle = watch_phase(st, ctx, "idle", secs, load=False)
    st.data["idle"] = idle
    st.find("at idle: trainscope %s, nvidia-smi util mean %s" % (idle["trainscope_mean"],
                                                                   idle.get("nvidia_smi_util_mean")))
    judge_watch_util(st, "at idle", idle)
    load = st.data.get("load")
    if load:
        lm, im = load["trainscope_mean"], idle["trainscope_mean"]
        for k in ("sm_active_pct", "tensor_active_pct"):
            if k not in lm:
                st.fail("%s: no GPM reading (GPM needs Hopper or newer and a driver that exposes it)" % k)
            elif not (lm[k] > 50 and im.get(k, 0) < 5):
                st.fail("%s: %.1f%% under load, %.1f%% at idle (expected high vs near zero)" % (k, lm[k], im.get(k, -1)))


def example_argv(ctx, name, steps):
    path = os.path.join(ctx.examples, name)
    return [ctx.python, path] + ([str(steps)] if steps else [])


def collect_traces(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "**", "*.json*"), recursive=True))


def count_cuda_sync(path):
    """How many Kineto cuda_sync events a trace (.json or .json.gz) holds."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", errors="replace") as f:
            return len(re.findall(r'"cat"\s*:\s*"cuda_sync"', f.read()))
    except (OSError, EOFError):
        return 0


def torch_at_least(ctx, major, minor):
    m = re.match(r"(\d+)\.(\d+)", (ctx.torch or {}).get("torch") or "")
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def stage_examples(st, ctx):
    if not ctx.python:
        st.skip("every example: no Python with torch (pass --python or set TRAINSCOPE_PYTHON)")
        return
    results = []
    trace_files = []
    for name, expected, on_cpu in EXAMPLES:
        if not ctx.cuda and not on_cpu:
            st.skip("%s (expects %s): the finding needs a GPU" % (name, expected))
            continue
        if ctx.quick and ctx.cuda is False and name not in ("healthy.py", "data_starved.py"):
            st.skip("%s: --quick runs two examples on a CPU-only host" % name)
            continue
        if st.left() < 60:
            st.skip("%s: stage time budget spent" % name)
            continue
        run_dir = os.path.join(ctx.work, "runs", name[:-3])
        steps = 20 if ctx.quick else None  # past the default profiler window (steps 10-14)
        rc, out = st.run([ctx.ts, "run", "--out", run_dir, "--store", ctx.store, "--"] + example_argv(ctx, name, steps),
                         "run-%s.txt" % name[:-3], timeout=min(240, st.left() - 30))
        r = {"example": name, "expected": expected, "exit": rc}
        rep = os.path.join(run_dir, "report.json")
        if not os.path.exists(rep):
            st.fail("%s: no report.json (exit %d)" % (name, rc))
            results.append(r)
            continue
        report = json.load(open(rep))
        ids = [f.get("id") for f in report.get("findings", [])]
        problems = [i for i in ids if i not in ENVIRONMENT_FINDINGS]
        r["findings"] = ids
        run_sec = report.get("run") or {}
        agent = run_sec.get("agent") or {}
        r["step_ms_median"] = (agent.get("summary") or {}).get("step_ms")
        r["steps"] = agent.get("steps")
        r["verdict"] = report.get("verdict")
        for t in collect_traces(run_dir):
            if "trace" in os.path.basename(t):
                trace_files.append((name[:-3], t))
                r["cuda_sync_events"] = r.get("cuda_sync_events", 0) + count_cuda_sync(t)
        # The agent asks Kineto for CUDA sync events on PyTorch >= 2.1 (profiler_window.sync_events_config):
        # host_sync.py's .item() calls must show up as cuda_sync rows on the GPU timeline.
        if name == "host_sync.py" and ctx.cuda and torch_at_least(ctx, 2, 1) and not r.get("cuda_sync_events"):
            st.fail("host_sync.py: its trace has no cuda_sync events (the profiler's sync-events option did not take)")
        if expected is None:
            r["ok"] = rc == 0 and not problems
            msg = "%s: %s" % (name, "no finding" if not problems else "unexpected findings %s" % problems)
        else:
            r["ok"] = rc == 0 and bool(problems) and problems[0] == expected
            msg = "%s: top finding %s (expected %s)" % (name, problems[0] if problems else "none", expected)
        (st.find if r["ok"] else st.fail)(msg + ", median step %s ms" % r["step_ms_median"])
        results.append(r)
    # The multi-rank example: two gloo ranks, on CPU or GPU alike.
    if st.left() > 120 and not ctx.quick:
        run_dir = os.path.join(ctx.work, "runs", "ddp")
        rc, out = st.run([ctx.ts, "run", "--out", run_dir, "--store", ctx.store, "--", ctx.python, "-m",
                          "torch.distributed.run", "--nproc_per_node=2", os.path.join(ctx.examples, "ddp",
                                                                                         "train_ddp_gloo.py"),
                          "--steps", "20"], "run-ddp.txt", timeout=min(300, st.left() - 30))
        ok = rc == 0 and os.path.exists(os.path.join(run_dir, "report.json"))
        (st.find if ok else st.fail)("ddp/train_ddp_gloo.py (2 gloo ranks): exit %d, report %s" %
                                     (rc, "written" if ok else "missing"))
        results.append({"example": "ddp/train_ddp_gloo.py", "exit": rc, "ok": ok})
        trace_files += [("ddp", t) for t in collect_traces(run_dir) if "trace" in os.path.basename(t)]
    else:
        st.skip("ddp/train_ddp_gloo.py: %s" % ("--quick" if ctx.quick else "stage time budget spent"))
    st.data["examples"] = results
    kept = write_tars(ctx, "traces-examples", trace_files)
    st.data["trace_tars"] = kept
    if trace_files:
        st.find("kept %d example traces in %s" % (len(trace_files), ", ".join(kept) or "nothing (too large)"))


def write_tars(ctx, stem, members, limit=MAX_FILE_BYTES, max_parts=2):
    """Writes (group, path) members, each gzipped on its own (group/name.gz), into OUTDIR/STEM.tar, split
    into STEM-2.tar when one would pass LIMIT. OUTDIR's files: summary.json, logs.tar.gz, up to 2 example
    tars and 1 per torch2 stage: 6 of the 8 allowed."""
    for old in glob.glob(os.path.join(ctx.out, stem + "*.tar")):
        os.remove(old)
    if not members:
        return []
    names, cur, cur_size, part = [], None, 0, 1
    for group, path in members:
        gz = path if path.endswith(".gz") else os.path.join(ctx.work, "gz", group, os.path.basename(path) + ".gz")
        if gz != path:
            os.makedirs(os.path.dirname(gz), exist_ok=True)
            with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
        size = os.path.getsize(gz) + 1024  # plus its tar header
        if size > limit - 10240:
            say("[gpu-check] %s is %d bytes gzipped, too large for a tar of at most 16 MiB: left out" % (path, size))
            continue
        if cur is None or cur_size + size > limit - 10240:  # tar's end-of-archive blocks
            if cur is not None:
                cur.close()
            if len(names) >= max_parts:  # keeps OUTDIR within MAX_FILES
                say("[gpu-check] %s: more traces than %d tar(s) of 16 MiB hold; the rest left out" % (stem, max_parts))
                cur = None
                break
            name = "%s.tar" % stem if part == 1 else "%s-%d.tar" % (stem, part)
            cur = tarfile.open(os.path.join(ctx.out, name), "w")
            names.append(name)
            cur_size, part = 0, part + 1
        cur.add(gz, arcname="%s/%s" % (group, os.path.basename(gz)))
        cur_size += size
    if cur is not None:
        cur.close()
    return names


def compare_losses(a, b):
    la, lb = a.get("losses") or [], b.get("losses") or []
    if not la or len(la) != len(lb):
        return None, False
    worst = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(la, lb))
    return worst, worst <= 1e-5  # deterministic kernels, same seed: equal up to float rounding


def stage_torch2(st, ctx):
    if not torch_at_least(ctx, 2, 0):
        st.skip("torch.compile / CUDA graphs / fused AdamW cases: %s has torch %s (need >= 2.0)" %
                (ctx.python, ctx.torch["torch"] if ctx.torch else "none"))
        return
    if not ctx.cuda:
        st.skip("torch 2.x cases: no CUDA device (they exercise CUDA graphs, fused AdamW and inductor on the GPU)")
        return
    results, traces = [], []
    steps = 10 if ctx.quick else 30
    for case in TORCH2_CASES[st.name]:
        if st.left() < 60:
            st.skip("%s: stage time budget spent" % case)
            continue
        plain = os.path.join(ctx.work, "torch2-%s-plain.json" % case)
        under = os.path.join(ctx.work, "torch2-%s-trainscope.json" % case)
        script = os.path.join(HERE, "torch2_case.py")
        rc_p, _ = st.run([ctx.python, script, case, plain, "--steps", str(steps)], "%s-plain.txt" % case,
                         timeout=min(200, st.left() - 20))
        run_dir = os.path.join(ctx.work, "runs", "torch2-" + case)
        rc_t, _ = st.run([ctx.ts, "run", "--out", run_dir, "--store", ctx.store, "--", ctx.python, script, case, under,
                          "--steps", str(steps)], "%s-trainscope.txt" % case, timeout=min(240, st.left() - 10))
        a = json.load(open(plain)) if os.path.exists(plain) else {"error": "no result (exit %d)" % rc_p}
        b = json.load(open(under)) if os.path.exists(under) else {"error": "no result (exit %d)" % rc_t}
        r = {"case": case, "exit_plain": rc_p, "exit_trainscope": rc_t, "plain": a, "trainscope": b}
        traces += [("torch2-" + case, t) for t in collect_traces(run_dir) if "trace" in os.path.basename(t)]
        if a.get("error"):
            r["ok"] = None  # the case itself fails without trainscope: a PyTorch/machine fact, not ours
            st.skip("%s fails without trainscope too: %s" % (case, a["error"][:200]))
        elif b.get("error") or rc_t != 0:
            r["ok"] = False
            st.fail("%s: fails only under trainscope (exit %d): %s" % (case, rc_t, str(b.get("error"))[:200]))
        else:
            worst, same = compare_losses(a, b)
            da, db_ = a.get("dynamo") or {}, b.get("dynamo") or {}
            breaks_same = da.get("graph_breaks") == db_.get("graph_breaks") and \
                da.get("unique_graphs") == db_.get("unique_graphs")
            r.update({"max_rel_loss_diff": worst, "same_losses": same, "same_graph_breaks": breaks_same})
            r["ok"] = same and breaks_same
            (st.find if r["ok"] else st.fail)(
                "%s: losses %s (max rel diff %s), graph breaks %s/%s, graphs %s/%s (plain/trainscope)" %
                (case, "equal" if same else "DIFFER", worst, da.get("graph_breaks"), db_.get("graph_breaks"),
                 da.get("unique_graphs"), db_.get("unique_graphs")))
        for side in ("plain", "trainscope"):  # keep the summary small: the traceback lives in the logs
            r[side].pop("traceback", None)
        results.append(r)
    st.data["cases"] = results
    st.data["trace_tars"] = write_tars(ctx, "traces-" + st.name, traces, max_parts=1)


OVERHEAD_MODELS = (("mlp", 400), ("gpt", 150))
OVERHEAD_MIN_PAIRS = 2  # a median of one pair is one sample: a neighbour or a clock change decides it
# One plain run and one under `trainscope run`, start-up and (under trainscope) the report included, in seconds:
# on the H100 and H200 (2026-11-27) the mlp pair took 20-29 s and the gpt pair about 30 s. Replaced by what
# this machine measures once a pair has run.
OVERHEAD_PAIR_S = {"mlp": 30.0, "gpt": 40.0}


def overhead_plan(left_s, quick, pair_s=None):
    """The alternated pairs [(model, repeat)] that fit LEFT_S: mlp, gpt, mlp, gpt, ... so both models get
    their pairs alike, at least OVERHEAD_MIN_PAIRS each or none at all (then the reason)."""
    pair_s = dict(OVERHEAD_PAIR_S, **(pair_s or {}))
    want = OVERHEAD_MIN_PAIRS if quick else 4
    need = OVERHEAD_MIN_PAIRS * sum(pair_s.values())
    if left_s < need:
        return [], "two alternated pairs of each model need about %.0f s, %.0f s left" % (need, left_s)
    plan, spent = [], 0.0
    for i in range(want):
        for model, _ in OVERHEAD_MODELS:
            if spent + pair_s[model] > left_s:
                return plan, None
            plan.append((model, i))
            spent += pair_s[model]
    return plan, None


def stage_overhead(st, ctx):
    if not ctx.cuda:
        st.skip("GPU overhead benchmark: no CUDA device (bench/run has the CPU benchmark)")
        return
    plan, why = overhead_plan(st.left() - 10, ctx.quick)
    st.data["plan"] = ["%s#%d" % p for p in plan]
    if not plan:
        st.skip("overhead: %s (run it alone: --stage overhead)" % why)
        return
    steps = dict(OVERHEAD_MODELS)
    times = {m: ([], []) for m, _ in OVERHEAD_MODELS}
    took = {}
    for model, i in plan:  # interleaved: a drifting clock or a neighbour hits both sides alike
        left = st.left() - 10
        if left < took.get(model, OVERHEAD_PAIR_S[model]):
            st.skip("overhead %s pair %d: %.0f s left, a pair takes about %.0f s" %
                    (model, i + 1, left, took.get(model, OVERHEAD_PAIR_S[model])))
            continue
        t0 = time.monotonic()
        argv = [ctx.python, os.path.join(HERE, "overhead_gpu.py"), model, str(steps[model])]
        _, o1 = st.run(argv, "%s-plain-%d.txt" % (model, i), timeout=150)
        _, o2 = st.run([ctx.ts, "run", "--out", os.path.join(ctx.work, "runs", "overhead-%s-%d" % (model, i)),
                        "--store", ctx.store, "--"] + argv, "%s-trainscope-%d.txt" % (model, i), timeout=200)
        took[model] = time.monotonic() - t0
        m1, m2 = (re.search(r"BENCH .*median_ms=([0-9.]+)", o) for o in (o1, o2))
        if m1 and m2:  # a pair counts only whole: one side alone says nothing about the overhead
            times[model][0].append(float(m1.group(1)))
            times[model][1].append(float(m2.group(1)))
        else:
            st.fail("overhead %s pair %d: no BENCH line from the %s run (see logs/overhead)" %
                    (model, i + 1, "plain" if not m1 else "trainscope"))
    for model, (plain, under) in times.items():
        if not plain:
            continue
        p, u = statistics.median(plain), statistics.median(under)
        st.data[model] = {"plain_ms": plain, "trainscope_ms": under, "overhead_pct": round((u / p - 1) * 100, 2)}
        (st.find if u / p - 1 <= 0.01 else st.fail)(
            "%s: median step %.3f ms plain, %.3f ms under trainscope over %d pair(s): %+.2f%% (goal <= 1%%)" %
            (model, p, u, len(plain), (u / p - 1) * 100))


def stage_lab(st, ctx):
    if not ctx.python:
        st.skip("lab: no Python with torch")
        return
    target = os.path.join(ctx.examples, "lab", "tiny_convnet.py") + ":factory"
    argv = [ctx.ts, "lab", target, "--json", "--no-store", "--python", ctx.python]
    if ctx.quick or not ctx.cuda:
        argv += ["--steps", "5", "--warmup", "2"]
    rc, out = st.run(argv, "lab.json", timeout=st.left() - 10)
    res = json_output(st, out, "lab", rc)
    if res is None:
        return
    st.data["lab"] = res
    rows = res.get("configs") or res.get("results") or []
    st.find("lab on %s (exit %d): %s" % ("the GPU" if ctx.cuda else "the CPU", rc, json.dumps(
        {r.get("config", r.get("name")): r.get("median_ms", r.get("step_ms_median")) for r in rows
         if isinstance(r, dict)})[:300]))
    if rc != 0:
        st.fail("lab exited %d" % rc)
    if not ctx.cuda:
        st.skip("lab fp32/bf16/compile ratios on a GPU: no CUDA device")


def stage_max_batch(st, ctx):
    if not ctx.python:
        st.skip("max-batch: no Python with torch")
        return
    target = os.path.join(ctx.examples, "lab", "tiny_convnet.py") + ":wide_activations"
    argv = [ctx.ts, "max-batch", target, "--json", "--no-store", "--python", ctx.python]
    if not ctx.cuda:
        argv += ["--memory-limit", "256MiB", "--cap", "64"]
    rc, out = st.run(argv, "max-batch.json", timeout=st.left() - 10)
    res = json_output(st, out, "max-batch", rc)
    if res is None:
        return
    st.data["max_batch"] = res
    keys = {k: res.get(k) for k in ("max_batch", "recommended_batch", "device", "bytes_per_sample") if k in res}
    st.find("max-batch on %s (exit %d): %s" % ("the GPU" if ctx.cuda else "the CPU (256 MiB budget)", rc,
                                               json.dumps(keys)[:300]))
    if rc != 0:
        st.fail("max-batch exited %d" % rc)
    if not ctx.cuda:
        st.skip("max-batch against real GPU memory: no CUDA device")


RUNNERS = {"env": stage_env, "snapshot": stage_snapshot, "watch": stage_watch, "examples": stage_examples,
           "torch2-compile": stage_torch2, "torch2-eager": stage_torch2, "overhead": stage_overhead, "lab": stage_lab, "max-batch": stage_max_batch}


# ------------------------------------------------------------------------------------------ summary

def update_summary(ctx, records):
    path = os.path.join(ctx.out, "summary.json")
    summary = {}
    if os.path.exists(path):
        try:
            summary = json.load(open(path))
        except ValueError:
            summary = {}
    if summary.get("schema") != SCHEMA:
        summary = {"schema": SCHEMA, "stages": {}}
    summary["updated_unix"] = int(time.time())
    summary["bundle"] = ctx.bundle
    summary["gpus"] = ctx.gpus
    summary["python"] = {"path": ctx.python, **(ctx.torch or {})}
    summary["stages"].update(records)
    if getattr(ctx, "lanes", None):
        summary["lanes"] = ctx.lanes
    summary["overall"] = "fail" if any(s["status"] == "fail" for s in summary["stages"].values()) else "pass"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return summary


def update_logs(ctx, stage_names):
    """OUTDIR/logs.tar.gz keeps every command's output; a re-run stage replaces its own folder."""
    path = os.path.join(ctx.out, "logs.tar.gz")
    kept = []
    if os.path.exists(path):
        with tarfile.open(path, "r:gz") as old:
            for m in old.getmembers():
                if m.isfile() and m.name.split("/")[0] not in stage_names:
                    kept.append((m, old.extractfile(m).read()))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for m, data in kept:
            t.addfile(m, io.BytesIO(data))
        for s in stage_names:
            d = os.path.join(ctx.logs, s)
            for root, _, files in os.walk(d):
                for fn in sorted(files):
                    full = os.path.join(root, fn)
                    t.add(full, arcname=os.path.relpath(full, ctx.logs))
    data = buf.getvalue()
    if len(data) > MAX_FILE_BYTES:  # never expected (text logs); keep the limit all the same
        data = data[:0]
        print("[gpu-check] logs.tar.gz would pass 16 MiB: not written")
        return
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def check_outdir(ctx):
    files = [f for f in os.listdir(ctx.out) if not f.endswith(".tmp")]
    big = [f for f in files if os.path.getsize(os.path.join(ctx.out, f)) > MAX_FILE_BYTES]
    if len(files) > MAX_FILES or big:
        print("[gpu-check] OUTDIR holds %d files (limit %d), %s over 16 MiB" % (len(files), MAX_FILES, big or "none"))
        return False
    return True


def main(argv):
    ap = argparse.ArgumentParser(prog="gpu-check", description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", help="the unpacked trainscope bundle (holds bin/trainscope)")
    ap.add_argument("outdir")
    ap.add_argument("--stage", action="append", choices=STAGES + ["all"], help="run only this stage (repeatable)")
    ap.add_argument("--python", help="the Python with torch the workloads run in")
    ap.add_argument("--quick", action="store_true", help="fewer steps and examples (the CI self-test)")
    ap.add_argument("--budget", type=float, metavar="SECONDS",
                    help="the whole run's time: stages stop starting work once it is spent (e.g. 540 for a "
                         "10-minute device command)")
    ap.add_argument("--min-lane-cores", type=int, default=lanes.MIN_LANE1_CORES, metavar="N",
                    help="the fewest cores lane 1 (examples) may get; with fewer every stage runs alone "
                         "(default %(default)s; the self-test lowers it to try the lanes on a small machine)")
    args = ap.parse_args(argv)
    stages = STAGES if not args.stage or "all" in args.stage else [s for s in STAGES if s in args.stage]
    ctx = Context(args)
    if not os.access(ctx.ts, os.X_OK):
        print("gpu-check: %s: no bin/trainscope there (pass the unpacked bundle)" % ctx.bundle, file=sys.stderr)
        return 2
    os.makedirs(ctx.out, exist_ok=True)
    ctx.python, ctx.torch = find_python(args.python)
    ctx.cuda = bool(ctx.torch and ctx.torch.get("cuda"))
    gpus, err = nvidia_smi_gpus()
    ctx.gpus = gpus or []
    ctx.gpu_error = err or ("nvidia-smi lists no GPU" if not gpus else None)
    os.environ.setdefault("TRAINSCOPE_PYTHON", ctx.python or "")
    print("gpu-check: bundle %s, python %s (torch %s, CUDA %s), GPUs: %s" % (
        ctx.bundle, ctx.python, ctx.torch and ctx.torch["torch"], "yes" if ctx.cuda else "no",
        ", ".join(g["name"] for g in ctx.gpus) or "none (%s)" % ctx.gpu_error), flush=True)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    # Without CUDA the GPU-only stages skip at once: the plan must not leave out others for their GPU times.
    quick = {} if ctx.cuda else {"overhead": 2, "torch2-compile": 5, "torch2-eager": 5}
    plan = lanes.plan(stages, args.budget, cores if ctx.taskset else [], estimate=quick,
                      min_lane1=args.min_lane_cores)
    print("gpu-check: lane plan: %s" % plan.describe(), flush=True)
    records = {}

    def run_stage(name, lane="alone", cores=None):
        st = Stage(name, ctx, lane, cores)
        say("[%s] starting%s" % (name, "" if cores is None else " in lane %s (cores %s)" % (
            lane, lanes.core_text(cores))))
        try:
            if st.left() < 30:
                st.skip("%s: the run's --budget is spent (run it alone: --stage %s)" % (name, name))
            else:
                RUNNERS[name](st, ctx)
        except Exception as e:  # one broken stage must not lose the others' results
            st.fail("stage crashed: %s: %s" % (type(e).__name__, e))
        r = st.record()
        say("[%s] %s in %.0f s: %d found, %d skipped, %d failed" % (
            name, r["status"], r["duration_s"], len(r["found"]), len(r["skipped"]), len(r["failed"])))
        with ctx.lock:
            records[name] = r
            update_summary(ctx, {name: r})
            update_logs(ctx, [name])

    def run_lane(lane, names, cores):
        for name in names:
            run_stage(name, lane, cores)

    try:
        for name, why in plan.skipped.items():
            st = Stage(name, ctx)
            st.skip(why)
            records[name] = st.record()
            update_summary(ctx, {name: records[name]})
        for kind, what in plan.phases:
            if kind == "alone":
                run_stage(what)
                continue
            threads = [threading.Thread(target=run_lane, args=(str(lane), what[lane], plan.lanes[lane - 1]))
                       for lane in (1, 2) if what[lane]]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        # Who shared the GPU with whom, from when each stage of this run actually ran.
        ran = {n: (r["started_s"], r["ended_s"], r["lane"] == "alone") for n, r in records.items()
               if n not in plan.skipped}
        shared = lanes.shared_with(ran)
        for n in records:
            records[n]["shared_gpu_with"] = shared.get(n, [])
        ctx.lanes = {"plan": plan.describe(), "taskset": bool(ctx.taskset), "budget_s": args.budget,
                     "lane_cores": [lanes.core_text(c) for c in plan.lanes] if plan.lanes else None}
        update_summary(ctx, records)
    finally:
        shutil.rmtree(ctx.work, ignore_errors=True)
    summary = update_summary(ctx, {})
    ok_files = check_outdir(ctx)
    print("gpu-check: %s; stages %s; results in %s" % (
        summary["overall"], ", ".join("%s=%s" % (k, v["status"]) for k, v in summary["stages"].items()), ctx.out))
    return 0 if summary["overall"] == "pass" and ok_files else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
