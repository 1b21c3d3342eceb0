#!/usr/bin/python3
"""Independent reference implementation of trainscope's key trace analyses.

Python standard library only (gzip + json), written separately from the C++ code in
src/analysis/ and deliberately by other means (sweep lines over boundaries instead of
interval subtraction; TensorBoard's two-pointer step matching instead of binary search),
so that agreement between the two is evidence. The expected numbers in
tests/analysis/fixture_trace_test.cpp were produced by this script:

    /usr/bin/python3 tests/analysis/reference_values.py tests/data/<trace>.json.gz ...

Definitions: docs/ANALYSES.md. Times are integer nanoseconds (microsecond text scaled by
1000, rounded half away from zero, like the reader).
"""
import decimal
import gzip
import json
import sys
from collections import defaultdict

D = decimal.Decimal


def to_ns(v):
    if v is None:
        return 0
    return int((D(str(v)) * 1000).quantize(D(1), rounding=decimal.ROUND_HALF_UP))


CATS = {
    "cpu_op": "host", "operator": "host", "user_annotation": "host",
    "cuda_runtime": "runtime", "runtime": "runtime", "cuda_driver": "runtime", "driver": "runtime",
    "kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
    "memset": "memset", "python_function": "python", "cuda_sync": "cuda_sync",
}


def is_comm(name):
    n = name[5:] if name.startswith("void ") else name
    return (n.startswith(("nccl", "hccl", "rccl")) or "ncclKernel" in n or "ncclDevKernel" in n)


def is_dataloader(name):
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or \
        name.startswith("enumerate(DataPipe)#")


class Ev:
    __slots__ = ("name", "kind", "annotation", "pid", "tid", "ts", "end", "dur", "corr", "args")

    def __init__(self, e, kind):
        self.name = e.get("name", "")
        self.kind = kind
        self.annotation = str(e.get("cat", "")).lower() == "user_annotation"
        self.pid = e.get("pid")
        self.tid = e.get("tid")
        self.ts = to_ns(e.get("ts"))
        self.dur = to_ns(e.get("dur", 0))
        self.end = self.ts + self.dur
        a = e.get("args") or {}
        self.corr = a.get("correlation")
        self.args = a


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=D)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    meta = doc if isinstance(doc, dict) else {}
    out = defaultdict(list)
    for e in events:
        if e.get("ph") == "i" and e.get("name") == "[memory]":
            out["memory"].append(Ev(e, "memory"))
            continue
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        kind = CATS.get(cat.lower()) if isinstance(cat, str) else ("host" if not isinstance(doc, dict) else None)
        if kind:
            out[kind].append(Ev(e, kind))
    for k in out:
        out[k].sort(key=lambda ev: ev.ts)
    return out, meta


def union(intervals):
    """Merged list of (b, e); touching intervals merge; empty ones vanish."""
    out = []
    for b, e in sorted(intervals):
        if e <= b:
            continue
        if out and b <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([b, e])
    return out


def total(merged):
    return sum(e - b for b, e in merged)


def gpu_events(ev, lo, hi):
    """Kernels, copies and memsets that start in [lo, hi): the GPU work the analyses count."""
    return [g for g in ev["kernel"] + ev["memcpy"] + ev["memset"] if lo <= g.ts < hi]


def runtime_by_corr(ev):
    """Correlation id -> the runtime call that launched it (the earliest with that id)."""
    out = {}
    for r in ev["runtime"]:  # load() sorts by ts: the first seen is the earliest
        if r.corr is not None and r.corr not in out:
            out[r.corr] = r
    return out


def clip_total(merged, lo, hi):
    return sum(max(0, min(e, hi) - max(b, lo)) for b, e in merged)


def median_floor(values):
    v = sorted(values)
    if not v:
        return 0
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) // 2


def find_steps(ev):
    """TensorBoard plugin's steps: host ProfilerStep#, two-pointer runtime matching, extension, tail drop."""
    host = []
    seen = set()
    for h in ev["host"]:
        if h.name.startswith("ProfilerStep#"):
            n = int(h.name.split("#")[1])
            if n in seen:
                continue
            seen.add(n)
            host.append([h.ts, h.end, n])
    synthetic = False
    if not host:
        cpu = ev["host"] + ev["runtime"]
        if not cpu:
            cpu = ev["kernel"] + ev["memcpy"] + ev["memset"]
        if not cpu:
            return [], 0, False
        host = [[min(x.ts for x in cpu), max(x.end for x in cpu), 0]]
        synthetic = True
    host.sort()
    gpu = ev["kernel"] + ev["memcpy"] + ev["memset"]
    by_corr = defaultdict(list)
    for g in gpu:
        if g.corr is not None:
            by_corr[g.corr].append(g)
    runtimes = sorted(ev["runtime"], key=lambda r: r.ts)
    n = len(host)
    dev = [[None, None] for _ in range(n)]
    count = [0] * n
    matched = set()
    i = j = 0
    while i < n and j < len(runtimes):
        rt = runtimes[j]
        s, e = host[i][0], host[i][1]
        if rt.ts < s:
            j += 1
        elif rt.end <= e:
            for g in by_corr.get(rt.corr, []) if rt.corr is not None else []:
                dev[i][0] = g.ts if dev[i][0] is None else min(dev[i][0], g.ts)
                dev[i][1] = g.end if dev[i][1] is None else max(dev[i][1], g.end)
                count[i] += 1
                matched.add(id(g))
            j += 1
        elif rt.ts < e:
            j += 1
        else:
            i += 1
    steps = [[h[0], h[1], h[2]] for h in host]
    dropped = 0
    if matched:
        prev = host[0][0]
        if dev[0][0] is not None:
            for g in gpu:
                if id(g) not in matched and g.end < dev[0][0]:
                    prev = max(prev, g.end)
        for k in range(n):
            start = max(prev, host[k][0])
            end = host[k][1]
            if dev[k][1] is not None:
                end = max(end, dev[k][1])
            end = max(end, start)
            steps[k][0], steps[k][1] = start, end
            prev = end
        if n > 1:
            last = n - 1
            while last >= 0 and count[last] == 0:
                last -= 1
            if last >= 0:
                keep = last + 1
                if last > 0 and count[last - 1] * 0.8 > count[last]:
                    keep = last
                dropped = n - keep
                steps = steps[:keep]
    return steps, dropped, synthetic


def innermost_operators(host, threads):
    """Per thread, the stretches whose innermost host event is an operator: the events sorted
    outermost first (start, then the longer), each closing the stretch of what it interrupts."""
    out = []
    by_thread = defaultdict(list)
    for h in host:
        if (h.pid, h.tid) in threads and h.dur > 0:
            by_thread[(h.pid, h.tid)].append(h)
    for evs in by_thread.values():
        evs.sort(key=lambda h: (h.ts, -h.dur))
        stack = []  # [end, is_operator, resume]: resume is where its own stretch restarts

        def close_until(t):
            while stack and stack[-1][0] <= t:
                end, op, resume = stack.pop()
                if op and end > resume:
                    out.append((resume, end))
                if stack:
                    stack[-1][2] = end

        for h in evs:
            close_until(h.ts)
            if stack:
                end, op, resume = stack[-1]
                if op and h.ts > resume:
                    out.append((resume, h.ts))
            operator = not h.annotation and not h.name.startswith("ProfilerStep#")
            stack.append([min(h.end, stack[-1][0]) if stack else h.end, operator, h.ts])
        close_until(float("inf"))
    return out


def breakdown(ev, steps):
    """Sweep over all role-interval boundaries; each elementary segment goes to the
    highest-priority role covering it. A collective annotated on a thread that runs no
    ProfilerStep# (gloo's workers) ranks below the stretches where a step thread's innermost event
    is an operator (cpu_op), and above the rest of cpu_exec (scopes such as FSDP::all_gather,
    and operators that only hold one, wait there)."""
    roles = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "communication",
             "cpu_exec"]
    step_threads = {(h.pid, h.tid) for h in ev["host"] if h.name.startswith("ProfilerStep#")}
    ivs = [(b, e, 6) for b, e in innermost_operators(ev["host"], step_threads)]
    for k in ev["kernel"]:
        ivs.append((k.ts, k.end, 3 if is_comm(k.name) else 0))
    ivs += [(x.ts, x.end, 1) for x in ev["memcpy"]]
    ivs += [(x.ts, x.end, 2) for x in ev["memset"]]
    ivs += [(x.ts, x.end, 4) for x in ev["runtime"]]
    for h in ev["host"]:
        if h.name.startswith("ProfilerStep#"):
            continue
        if is_dataloader(h.name):
            ivs.append((h.ts, h.end, 5))
        elif h.name.startswith(("nccl:", "gloo:")):
            beside = step_threads and (h.pid, h.tid) not in step_threads
            ivs.append((h.ts, h.end, 7 if beside else 3))
        else:
            ivs.append((h.ts, h.end, 8))
    points = defaultdict(lambda: [0] * 9)
    for b, e, r in ivs:
        if e > b:
            points[b][r] += 1
            points[e][r] -= 1
    for s, e, _ in steps:
        points[s]
        points[e]
    xs = sorted(points)
    cover = [0] * 9
    per_step = [dict.fromkeys(roles + ["other"], 0) for _ in steps]
    si = 0
    for a, b in zip(xs, xs[1:]):
        for r in range(9):
            cover[r] += points[a][r]
        while si < len(steps) and steps[si][1] <= a:
            si += 1
        if si >= len(steps) or steps[si][0] > a:
            continue
        # steps are disjoint and their bounds are sweep points: [a, b) lies inside step si
        role = next((roles[r] for r in range(9) if cover[r] > 0), "other")
        per_step[si][role] += b - a
    return per_step


def dataloader_host(ev, steps):
    dl = union([(h.ts, h.end) for h in ev["host"] if is_dataloader(h.name)])
    return sum(clip_total(dl, s, e) for s, e, _ in steps)


def gpu_time(ev, steps, lo, hi):
    gpu = gpu_events(ev, lo, hi)
    if not gpu:
        return {"present": False}
    busy = union([(g.ts, g.end) for g in gpu])
    compute = union([(g.ts, g.end) for g in gpu if g.kind == "kernel" and not is_comm(g.name)])
    kernels = union([(g.ts, g.end) for g in gpu if g.kind == "kernel"])
    span = max(g.end for g in gpu) - min(g.ts for g in gpu)
    rt_by_corr = runtime_by_corr(ev)
    starts = defaultdict(list)
    for g in gpu:
        starts[g.ts].append(g)
    host_wait = kernel_wait = other = 0
    for (b0, e0), (b1, e1) in zip(busy, busy[1:]):
        gap = b1 - e0
        launched_late = False
        for g in starts[b1]:
            rt = rt_by_corr.get(g.corr) if g.corr is not None else None
            launched_late = launched_late or (rt is not None and rt.ts > e0)
        if launched_late:
            host_wait += gap
        elif gap < 30000:
            kernel_wait += gap
        else:
            other += gap
    step_time = sum(e - s for s, e, _ in steps)
    util = sum(clip_total(kernels, s, e) for s, e, _ in steps)
    return {
        "present": True, "span_ns": span, "busy_ns": total(busy), "idle_ns": span - total(busy),
        "compute_ns": total(compute), "idle_host_wait_ns": host_wait,
        "idle_kernel_wait_ns": kernel_wait, "idle_other_ns": other,
        "utilization_pct": 100.0 * util / step_time if step_time else 0.0,
    }


def kernel_stats(ev, nsteps, lo, hi):
    ks = [k for k in ev["kernel"] if lo <= k.ts < hi]
    durs = [k.dur for k in ks]
    by_name = defaultdict(list)
    for k in ks:
        by_name[k.name].append(k.dur)
    top = sorted(by_name.items(), key=lambda kv: (-sum(kv[1]), kv[0]))[:3]
    rt_by_corr = runtime_by_corr(ev)
    delays, launches, short, outl = [], 0, 0, 0
    for k in ks:
        rt = rt_by_corr.get(k.corr) if k.corr is not None else None
        if rt is None:
            continue
        launches += 1
        delays.append(max(0, k.ts - rt.end))
        if k.dur < rt.dur and rt.dur <= 50000:
            short += 1
        if rt.dur > 50000:
            outl += 1
    return {
        "count": len(ks), "per_step": len(ks) / nsteps if nsteps else 0, "total_ns": sum(durs),
        "median_ns": median_floor(durs),
        "under_10us_pct": 100.0 * sum(1 for d in durs if d < 10000) / len(durs) if durs else 0,
        "triton": sum(1 for k in ks if k.name.startswith("triton_")),
        "top": [[n[:40], len(d), sum(d)] for n, d in top],
        "launches": launches, "median_launch_delay_ns": median_floor(delays),
        "short_kernels": short, "runtime_outliers": outl,
    }


def copy_stats(ev, lo, hi):
    rows = defaultdict(lambda: [0, 0, 0])
    for c in ev["memcpy"] + ev["memset"]:
        if not (lo <= c.ts < hi):
            continue
        name = c.name
        inner = name[name.find("(") + 1:name.rfind(")")] if "(" in name else ""
        parts = [p.strip().lower() for p in inner.split("->")] if inner else []
        if name.startswith("Memset"):
            key = ("Memset", parts[0] if parts else "unknown")
        else:
            d = name.split()[1] if name.startswith("Memcpy ") else "other"
            if d in ("HtoD", "HtoH"):
                kind = parts[0] if parts else "unknown"
            elif d == "DtoH":
                kind = parts[-1] if parts else "unknown"
            elif d in ("DtoD", "PtoP"):
                kind = "device"
            else:
                kind = "unknown"
            key = (d, kind)
        r = rows[key]
        r[0] += 1
        b = c.args.get("bytes")
        if b and b > 0:
            r[1] += int(b)
        r[2] += c.dur
    blocking = sum(1 for r in ev["runtime"] if lo <= r.ts < hi
                   and r.name.startswith(("cudaMemcpy", "hipMemcpy")) and "Async" not in r.name)
    return {"rows": {f"{k[0]}/{k[1]}": v for k, v in sorted(rows.items())},
            "blocking_memcpy_calls": blocking}


def sync_stats(ev, steps, lo, hi):
    syncs = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
             "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize"}
    per_thread = defaultdict(list)
    rows = defaultdict(lambda: [0, 0])
    rt_corrs = {r.corr for r in ev["runtime"] if r.corr is not None}
    for r in ev["runtime"]:
        if lo <= r.ts < hi and (r.name in syncs or (r.name.startswith(("cudaMemcpy", "hipMemcpy"))
                                                     and "Async" not in r.name)):
            per_thread[(str(r.pid), str(r.tid))].append((r.ts, r.end))
            rows[r.name][0] += 1
            rows[r.name][1] += r.dur
    # One .item() counts once: an aten::item inside an earlier (outer) aten::item of its thread,
    # and an aten::_local_scalar_dense inside any aten::item of its thread, are the same call
    # (containment with equal ends allowed).
    def contains(i, h):
        return str(i.pid) == str(h.pid) and str(i.tid) == str(h.tid) and i.ts <= h.ts and h.end <= i.end

    all_items = sorted((h for h in ev["host"] if lo <= h.ts < hi and h.name == "aten::item"),
                       key=lambda h: (h.ts, -h.dur))
    items = []
    for h in all_items:
        if any(contains(i, h) for i in items):
            continue
        items.append(h)
    item_calls = len(items)
    for h in items:
        per_thread[(str(h.pid), str(h.tid))].append((h.ts, h.end))
        rows[h.name][0] += 1
        rows[h.name][1] += h.dur
    for h in ev["host"]:
        if lo <= h.ts < hi and h.name == "aten::_local_scalar_dense":
            key = (str(h.pid), str(h.tid))
            if any(contains(i, h) for i in items):
                continue
            item_calls += 1
            per_thread[key].append((h.ts, h.end))
            rows[h.name][0] += 1
            rows[h.name][1] += h.dur
    for c in ev["cuda_sync"]:
        if not (lo <= c.ts < hi):
            continue
        rows[c.name][0] += 1
        rows[c.name][1] += c.dur
        if c.name != "Stream Wait Event" and c.corr not in rt_corrs:
            per_thread[(str(c.pid), str(c.tid))].append((c.ts, c.end))
    count = t = 0
    for ivs in per_thread.values():
        ivs.sort()
        cb, ce = None, None
        for b, e in ivs:
            if cb is not None and b <= ce:
                ce = max(ce, e)
            else:
                if cb is not None:
                    count += 1
                    t += ce - cb
                cb, ce = b, e
        if cb is not None:
            count += 1
            t += ce - cb
    step_time = sum(e - s for s, e, _ in steps)
    return {"count": count, "time_ns": t, "item_calls": item_calls,
            "pct_of_step": 100.0 * t / step_time if step_time else 0,
            "rows": {k: v for k, v in sorted(rows.items())}}


def memory_stats(ev, steps, lo, hi):
    mem = [m for m in ev["memory"] if m.args.get("Device Type") == 1]
    if not mem:
        return {"present": False}
    per_dev = defaultdict(int)
    for m in mem:
        per_dev[m.args.get("Device Id")] += 1
    dev = max(sorted(per_dev), key=lambda d: per_dev[d])
    mem = [m for m in mem if m.args.get("Device Id") == dev]
    totals = any("Total Allocated" in m.args for m in mem)
    alloc = res = 0
    values = []  # (ts, alloc, res)
    for m in sorted(mem, key=lambda m: m.ts):
        if totals:
            alloc = int(m.args.get("Total Allocated", alloc))
            res = int(m.args.get("Total Reserved", res))
        else:
            alloc += int(m.args.get("Bytes", 0))
        values.append((m.ts, alloc, res))
    at_end = []
    for s, e, _ in steps:
        before = [v for v in values if v[0] < e]
        at_end.append(before[-1][1] if before else None)
    held = [v for v in values if v[0] < lo]
    inside = [v for v in values if lo <= v[0] < hi]
    peak_a = max([v[1] for v in inside] + ([held[-1][1]] if held else []) + [0])
    peak_r = max([v[2] for v in inside] + ([held[-1][2]] if held else []) + [0])
    pts = [(i, v) for i, v in enumerate(at_end) if v is not None]
    slope = 0.0
    if len(pts) >= 2:
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        den = sum((p[0] - mx) ** 2 for p in pts)
        slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else 0.0
    return {"present": True, "device": dev, "relative": not totals, "at_step_end": at_end,
            "slope": slope, "peak_allocated": peak_a, "peak_reserved": peak_r}


def comm_stats(ev, steps, lo, hi):
    ks = [k for k in ev["kernel"] if lo <= k.ts < hi]
    comm = union([(k.ts, k.end) for k in ks if is_comm(k.name)])
    comp = union([(k.ts, k.end) for k in ks if not is_comm(k.name)])
    busy = union([(g.ts, g.end) for g in gpu_events(ev, lo, hi)])
    overlap = sum(clip_total(comp, b, e) for b, e in comm)
    step_time = sum(e - s for s, e, _ in steps)
    return {"comm_kernels": sum(1 for k in ks if is_comm(k.name)), "comm_time_ns": total(comm),
            "comm_pct_of_gpu": 100.0 * total(comm) / total(busy) if busy else 0,
            "comm_overlap_pct": 100.0 * overlap / total(comm) if comm else 0,
            "comm_pct_of_step": 100.0 * sum(clip_total(comm, s, e) for s, e, _ in steps) / step_time
            if step_time else 0}


def analyse(path):
    ev, meta = load(path)
    steps, dropped, synthetic = find_steps(ev)
    if not steps:
        return {"path": path, "steps": 0}
    lo, hi = steps[0][0], steps[-1][1]
    per_step = breakdown(ev, steps)
    step_total = sum(e - s for s, e, _ in steps)
    tot = defaultdict(int)
    for b in per_step:
        for k, v in b.items():
            tot[k] += v
    assert sum(tot.values()) == step_total
    return {
        "path": path.split("/")[-1],
        "steps": len(steps), "dropped": dropped, "synthetic": synthetic,
        "step_numbers": [s[2] for s in steps],
        "step_durations_ns": [e - s for s, e, _ in steps],
        "total_ns": step_total,
        "breakdown_ns": dict(tot),
        "dataloader_host_ns": dataloader_host(ev, steps),
        "breakdown_pct": {k: 100.0 * v / step_total for k, v in tot.items()},
        "gpu": gpu_time(ev, steps, lo, hi),
        "kernels": kernel_stats(ev, len(steps), lo, hi),
        "copies": copy_stats(ev, lo, hi),
        "syncs": sync_stats(ev, steps, lo, hi),
        "memory": memory_stats(ev, steps, lo, hi),
        "comm": comm_stats(ev, steps, lo, hi),
    }


def flatten(d, prefix=""):
    """{"a": {"b": 1}, "l": [5]} -> {"a.b": 1, "l.0": 5}; copy rows [count, bytes, time] and
    sync rows [count, time] get named fields, matching tests/analysis/reference_json.cpp."""
    out = {}
    for k, v in d.items():
        key = prefix + str(k)
        if key.startswith("copies.rows."):
            name = key[len("copies.rows."):]
            out["copies." + name + ".count"], out["copies." + name + ".bytes"], \
                out["copies." + name + ".time_ns"] = v
        elif key.startswith("syncs.rows."):
            out[key + ".count"], out[key + ".time_ns"] = v
        elif key == "kernels.top":
            for i, (name, count, tot) in enumerate(v):
                out[f"kernels.top.{i}.count"], out[f"kernels.top.{i}.total_ns"] = count, tot
        elif key == "memory.at_step_end":
            for i, x in enumerate(v):
                if x is not None:
                    out[f"memory.at_step_end.{i}"] = x
        elif key == "memory.slope":
            out[key] = v
        elif isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                out[f"{key}.{i}"] = x
        else:
            out[key] = v
    return out


def check(cpp_json_path, trace_path):
    """Compares the C++ output with this script's values, walking both sides: a key either side
    has and the other lacks is a mismatch (apart from a zero, a row the other side leaves out
    when there is nothing to count, e.g. no copies at all). Exit 1 on any mismatch."""
    with open(cpp_json_path) as f:
        cpp = json.load(f)
    ref = flatten(analyse(trace_path))
    ref.pop("path", None)  # the file name, not a measurement

    def is_zero(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0

    bad = 0
    for k in sorted(set(cpp) | set(ref)):
        if k not in ref or k not in cpp:
            v = cpp.get(k, ref.get(k))
            if is_zero(v) or v is None:
                continue
            side = "reference" if k not in ref else "C++"
            print(f"{trace_path}: {k}: {v} on one side, {side} has no value")
            bad += 1
            continue
        v, r = cpp[k], ref[k]
        if isinstance(v, bool) or isinstance(r, bool):
            ok = bool(v) == bool(r)
        elif isinstance(v, float) or isinstance(r, float):
            ok = abs(float(v) - float(r)) <= 1e-5 * max(1.0, abs(float(r)))  # JsonWriter keeps ~6 digits
        else:
            ok = v == r
        if not ok:
            print(f"{trace_path}: {k}: C++ {v} != reference {r}")
            bad += 1
    both = len(set(cpp) & set(ref))
    print(f"{trace_path}: {both} values compared ({len(cpp)} C++, {len(ref)} reference), {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 3 and sys.argv[1] == "--flat":
        # One "key<TAB>value" line per value (the keys reference_json.cpp uses), for tests that
        # take their expected numbers from this independent implementation.
        for k, v in flatten(analyse(sys.argv[2])).items():
            print(f"{k}\t{json.dumps(v, default=str)}")
        sys.exit(0)
    for p in sys.argv[1:]:
        print(json.dumps(analyse(p), indent=1, default=str))
