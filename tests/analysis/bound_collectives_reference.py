#!/usr/bin/python3
"""Independent reference for the bound-by-per-step and collectives analyses
(src/analysis/step_bound.cpp, src/analysis/collectives.cpp; definitions in docs/ANALYSES.md).

Standard library only. Reuses reference_values.py's loader, step finder and interval helpers
(themselves independent of the C++), and computes the new quantities by other means than the C++:
bound-by from the complement of the busy union (the C++ walks the events with a running
end), per-step totals by clipping every piece to every step.

    /usr/bin/python3 tests/analysis/bound_collectives_reference.py tests/data/<trace>.json.gz
"""
import bisect
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_values as rv  # noqa: E402

CLASSES = ["gpu_compute", "communication", "data_loading", "cpu_bound", "launch_overhead",
           "kernel_kernel_overhead", "unknown"]


def complement(merged, lo, hi):
    out, at = [], lo
    for b, e in merged:
        if b > at:
            out.append([at, min(b, hi)])
        at = max(at, e)
        if at >= hi:
            break
    if at < hi:
        out.append([at, hi])
    return [x for x in out if x[1] > x[0]]


def subtract(a, b):
    """a minus b, both merged, by complement + intersection."""
    if not a:
        return []
    lo, hi = a[0][0], a[-1][1]
    return intersect(a, complement(b, lo, hi))


def intersect(a, b):
    """a ∩ b (both merged): two pointers."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append([lo, hi])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return rv.union(out)


def bound_by(ev, steps):
    lo, hi = steps[0][0], steps[-1][1]
    gpu = rv.gpu_events(ev, lo, hi)
    if not gpu:
        return None
    launcher = rv.runtime_by_corr(ev)
    starting = defaultdict(list)
    for g in gpu:
        rt = launcher.get(g.corr) if g.corr is not None else None
        starting[g.ts].append(rt.ts if rt is not None else None)
    compute = rv.union([(g.ts, g.end) for g in gpu if not (g.kind == "kernel" and rv.is_comm(g.name))])
    comm = rv.union([(g.ts, g.end) for g in gpu if g.kind == "kernel" and rv.is_comm(g.name)])
    busy = rv.union([(g.ts, g.end) for g in gpu])
    pieces = {c: [] for c in CLASSES}
    pieces["gpu_compute"] = compute
    pieces["communication"] = subtract(comm, compute)
    idle_cpu, idle_unknown = [], []
    last_busy_end = max(g.end for g in gpu)
    # Events shorter than the trace's resolution (dur 0) cover nothing but still end a gap: the
    # GPU started work there. Split the idle intervals at them.
    zero = sorted({g.ts for g in gpu if g.dur == 0})
    gaps = []
    for g0, g1 in complement(busy, lo, hi):
        cuts = zero[bisect.bisect_right(zero, g0):bisect.bisect_left(zero, g1)]
        for a, b in zip([g0] + cuts, cuts + [g1]):
            gaps.append((a, b))
    for g0, g1 in gaps:
        if g0 >= last_busy_end:  # the trailing gap: the host ran on after the GPU's last work
            idle_cpu.append([g0, g1])
            continue
        launches = [t for t in starting[g1] if t is not None]
        if not launches:
            idle_unknown.append([g0, g1])
        elif min(launches) <= g0:
            pieces["kernel_kernel_overhead"].append([g0, g1])
        else:
            cut = min(min(launches), g1)
            idle_cpu.append([g0, cut])
            pieces["launch_overhead"].append([cut, g1])
    loading = rv.union([(h.ts, h.end) for h in ev["host"] if rv.is_dataloader(h.name)])
    idle_cpu, idle_unknown = rv.union(idle_cpu), rv.union(idle_unknown)
    pieces["data_loading"] = rv.union(intersect(idle_cpu, loading) + intersect(idle_unknown, loading))
    pieces["cpu_bound"] = subtract(idle_cpu, loading)
    pieces["unknown"] = subtract(idle_unknown, loading)
    per_step = []
    for s, e, n in steps:
        ns = {c: rv.clip_total(rv.union(pieces[c]), s, e) for c in CLASSES}
        assert sum(ns.values()) == e - s, (n, ns, e - s)
        label = max(CLASSES, key=lambda c: (ns[c], -CLASSES.index(c)))
        per_step.append({"number": n, "label": label, "ns": ns})
    totals = {c: sum(p["ns"][c] for p in per_step) for c in CLASSES}
    return {"steps": per_step, "total_ns": totals,
            "bound_by": max(CLASSES, key=lambda c: (totals[c], -CLASSES.index(c)))}


DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2,
               "Char": 1, "Byte": 1, "Bool": 1}


def kernel_collective(name):
    n = name[5:] if name.startswith("void ") else name
    for p in ("ncclDevKernel_", "ncclKernel_"):
        if n.startswith(p):
            return n[len(p):].split("_")[0].split("(")[0].lower()
    return "unknown"


def collectives(ev, meta, steps):
    lo, hi = steps[0][0], steps[-1][1]
    gpu = rv.gpu_events(ev, lo, hi)
    comm = [g for g in gpu if g.kind == "kernel" and rv.is_comm(g.name)]
    if not comm:
        return None
    other = rv.union([(g.ts, g.end) for g in gpu if not (g.kind == "kernel" and rv.is_comm(g.name))])
    launcher = rv.runtime_by_corr(ev)
    params = [h for h in ev["host"] if h.name == "record_param_comms" and "Collective name" in h.args]
    world = (meta.get("distributedInfo") or {}).get("world_size", -1)
    rows = {}
    for k in comm:
        p = k.args if "Collective name" in k.args else None
        rt = launcher.get(k.corr)
        if p is None and rt is not None:
            around = [h for h in params if h.pid == rt.pid and h.tid == rt.tid and h.ts <= rt.ts <= h.end]
            if around:
                p = max(around, key=lambda h: h.ts).args
        name = p["Collective name"] if p else kernel_collective(k.name)
        dtype = p.get("dtype", "") if p else ""
        n = p.get("Group size", world) if p else world
        nbytes = None
        if p and dtype in DTYPE_BYTES:
            nbytes = max(int(p.get("In msg nelems", -1)), int(p.get("Out msg nelems", -1))) * DTYPE_BYTES[dtype]
        row = rows.setdefault((name, dtype, n), {"count": 0, "bytes": 0, "time_ns": 0, "exposed_ns": 0})
        row["count"] += 1
        row["bytes"] = None if nbytes is None or row["bytes"] is None else row["bytes"] + nbytes
        row["time_ns"] += k.dur
        row["exposed_ns"] += k.dur - rv.clip_total(other, k.ts, k.end)
    exposed = rv.total(subtract(rv.union([(k.ts, k.end) for k in comm]), other))
    return {"rows": {f"{a}/{b}/{c}": v for (a, b, c), v in rows.items()}, "count": len(comm),
            "exposed_ns": exposed}


def analyse(path):
    ev, meta = rv.load(path)
    steps, _, _ = rv.find_steps(ev)
    out = {"path": os.path.basename(path)}
    if steps:
        out["bound"] = bound_by(ev, steps)
        out["collectives"] = collectives(ev, meta, steps)
    return out


def check(cpp_json_path, trace_path):
    """Compares the C++ values (the same shape as analyse() prints) with this script's. Exit 1 on a mismatch."""
    with open(cpp_json_path) as f:
        cpp = json.load(f)
    ref = analyse(trace_path)
    bad = 0
    for key in ("bound", "collectives"):
        if cpp.get(key) != ref.get(key):
            print(f"{trace_path}: {key}:\n  C++       {json.dumps(cpp.get(key), sort_keys=True)}\n"
                  f"  reference {json.dumps(ref.get(key), sort_keys=True)}")
            bad += 1
    print(f"{trace_path}: bound and collectives compared, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    for p in sys.argv[1:]:
        print(json.dumps(analyse(p), indent=1, default=str))
