#!/usr/bin/python3
"""Independent reference for the GPU idle attribution (docs/ANALYSES.md "GPU idle by cause").

Standard library only, written apart from src/analysis/idle_attribution.cpp from the
definition in docs/ANALYSES.md. The C++ code sweeps a stack of open events once per thread and
looks pieces up by binary search; this script instead cuts every idle gap at all event
boundaries on the thread and, for each elementary slice, picks the deepest event covering it
from the list of events that contain it (the one opened last). Steps and the analysis window
come from reference_values.py (the TensorBoard step definition).

    /usr/bin/python3 tests/analysis/idle_reference.py tests/data/<trace>.json.gz   # prints JSON
    /usr/bin/python3 tests/analysis/idle_reference.py --check CPP.json TRACE         # compares

The C++ side (IdleAttribution.ByCauseMatchesReferenceScript) writes by-cause totals, idle_ns,
gaps and the top host events per cause as JSON; --check compares them exactly (integer ns).
"""
import bisect
import gzip
import json
import sys
from collections import defaultdict

import reference_values as rv

LAUNCH_GAP = 50_000
SETUP_MIN = 1_000_000
SETUP_RATIO = 10.0
LAZY_LAUNCH = 1_000_000
SYNC_SLACK = 20_000
CAUSES = ["sync", "launch", "data_loading", "optimizer", "memory", "setup", "host_compute",
          "stream_wait", "collective", "gpu_overhead", "untraced", "unattributed"]
NOTHING = "nothing recorded on the launching thread"
NO_LAUNCHER = "no launching thread known (no correlation ids, no runtime calls)"
QUEUED = "queued before the gap, yet the GPU idled: a dependency or GPU work the trace lacks (sampled or filtered trace)"
SWITCH = "work queued ahead; the GPU's own switch between kernels"
UNTRACED = ("queued behind its stream's last event, which ended as the gap began: GPU work the trace lacks "
            "(sampled or filtered trace)")
QUEUED_OVERHEAD = 30_000
BETWEEN_OPS = "Python between ops (inside the step, no op recorded)"

HOSTCAT = {"cpu_op": "op", "operator": "op", "user_annotation": "ann", "python_function": "py",
           "cuda_runtime": "rt", "runtime": "rt", "cuda_driver": "rt", "driver": "rt"}
GPUCAT = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
          "memset": "memset"}


class E:
    __slots__ = ("name", "k", "pid", "tid", "ts", "end", "corr", "dims", "order", "cend",
                 "parent", "info")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        doc = json.load(f, parse_float=rv.D)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    bare = not isinstance(doc, dict)
    host, gpu, waits = [], [], []
    for i, e in enumerate(evs):
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        c = cat.lower() if isinstance(cat, str) else None
        x = E()
        x.name = e.get("name", "")
        x.pid, x.tid = e.get("pid"), e.get("tid")
        x.ts = rv.to_ns(e.get("ts"))
        x.end = x.ts + rv.to_ns(e.get("dur", 0))
        a = e.get("args") or {}
        x.corr = a.get("correlation")
        x.dims = json.dumps(a.get("Input Dims"))
        x.order = i
        if c in GPUCAT:
            x.k = GPUCAT[c]
            gpu.append(x)
        elif c in HOSTCAT or (bare and c is None):
            x.k = HOSTCAT.get(c, "op")
            host.append(x)
        elif c == "cuda_sync" and x.name == "Stream Wait Event":
            waits.append(x)
    return host, gpu, waits


def rt_class(n):
    if n.endswith(("StreamSynchronize", "DeviceSynchronize", "EventSynchronize")) or n == "cuCtxSynchronize":
        return "sync"
    if n.startswith(("cudaMemcpy", "hipMemcpy", "cuMemcpy")):
        return "copyasync" if "Async" in n else "sync"  # hipMemcpyWithStream: a sync API (ROCm docs)
    if n.startswith(("cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaHostRegister", "cudaHostUnregister",
                     "cuMemAlloc", "cuMemFree", "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree")):
        return "memory"
    if n.startswith(("cuModuleLoad", "cuLibraryLoad", "hipModuleLoad")) or n == "cuModuleGetFunction":
        return "module"
    return "launch" if "Launch" in n else "other"


def is_pageable_copy(name):
    # "Memcpy HtoD (Pageable -> Device)": the host side is the source for HtoD, the target for DtoH.
    if "(" not in name or not name.startswith("Memcpy "):
        return False
    inner = name[name.index("(") + 1:name.rindex(")")]
    parts = [p.strip().lower() for p in inner.split("->")]
    d = name.split()[1]
    if d in ("HtoD", "HtoH"):
        return parts[0] == "pageable"
    if d == "DtoH":
        return parts[-1] == "pageable"
    return False


def attribute(path):
    ev, _ = rv.load(path)
    steps, _, _ = rv.find_steps(ev)
    host, gpu, waits = load(path)
    if not steps:
        return None
    lo, hi = steps[0][0], steps[-1][1]
    step_total = sum(b - a for a, b, _ in steps)
    gpu = sorted((g for g in gpu if lo <= g.ts < hi), key=lambda g: (g.ts, g.order))
    if not gpu:
        return None
    runtimes = {}
    for h in sorted((h for h in host if h.k == "rt"), key=lambda h: (h.ts, h.order)):
        if h.corr is not None and h.corr not in runtimes:
            runtimes[h.corr] = h
    launcher = lambda g: runtimes.get(g.corr) if g.corr is not None else None
    pageable = set()
    for g in [x for x in load(path)[1] if x.k == "memcpy"]:
        r = launcher(g)
        if r is not None and is_pageable_copy(g.name):
            pageable.add(id(r))

    # Launching threads.
    count = defaultdict(int)
    for g in gpu:
        r = launcher(g)
        if r is not None:
            count[(r.pid, r.tid)] += 1
    if not count:
        for h in host:
            if h.k == "rt" and lo <= h.ts < hi:
                count[(h.pid, h.tid)] += 1
    threads = sorted(count, key=lambda k: (-count[k], k))
    main = threads[0] if threads else None

    by_thread = defaultdict(list)
    for h in host:
        if h.end > h.ts and h.end > lo and h.ts < hi:
            by_thread[(h.pid, h.tid)].append(h)
    rank = {"ann": 0, "py": 1, "op": 2, "rt": 3}
    prepared = {}

    def prepare(t):
        if t in prepared:
            return prepared[t]
        evs = sorted(by_thread.get(t, []), key=lambda h: (h.ts, -(h.end - h.ts), rank[h.k]))
        # Clamp each event to its parent (the innermost earlier event still open).
        stack = []
        for h in evs:
            while stack and stack[-1].cend <= h.ts:
                stack.pop()
            h.parent = stack[-1] if stack else None
            h.cend = min(h.end, h.parent.cend) if h.parent else h.end
            h.cend = max(h.cend, h.ts)
            stack.append(h)
        # Slow first calls per (name, dims) among ops.
        groups = defaultdict(list)
        longn = {h.name for h in evs if h.k == "op" and h.end - h.ts >= SETUP_MIN}
        for h in evs:
            if h.k == "op" and h.name in longn:
                groups[(h.name, h.dims)].append(h)
        slow = set()
        for g in groups.values():
            f, rest = g[0], g[1:]
            if rest and f.end - f.ts >= SETUP_MIN and f.end - f.ts >= SETUP_RATIO * (sum(x.end - x.ts for x in rest) / len(rest)):
                slow.add(id(f))
        for h in evs:
            chain = []
            x = h
            while x is not None:
                chain.append(x)
                x = x.parent
            chain.reverse()  # outermost first
            setup = sync = data = opt = comm = False
            sync_ev = None
            op = outer = ann = frame = anyf = None
            for x in chain:
                n = x.name
                if x.k == "op" and n.startswith("ProfilerStep#"):
                    pass
                elif x.k == "op":
                    op = x
                    if outer is None and n.startswith("aten::"):
                        outer = x
                    if id(x) in slow:
                        setup = True
                    if n in ("aten::item", "aten::_local_scalar_dense", "aten::is_nonzero", "aten::nonzero", "aten::equal") and not sync:
                        sync, sync_ev = True, x
                elif x.k == "ann":
                    if not n.startswith("ProfilerStep#"):
                        ann = x
                elif x.k == "py":
                    if n.startswith("nn.Module: "):
                        ann = x
                    else:
                        anyf = x
                        if "torch/" not in n and not n.startswith("<built-in"):
                            frame = x
                        if "torch/_dynamo/" in n or "torch/_inductor/" in n or "triton/compiler/" in n:
                            setup = True
                else:
                    c = rt_class(n)
                    if c == "module" or (c == "launch" and x.end - x.ts >= LAZY_LAUNCH):
                        setup = True
                    if (c == "sync" or (c == "copyasync" and id(x) in pageable)) and not sync:
                        sync, sync_ev = True, x
                if rv.is_dataloader(n):
                    data = True
                if n.startswith(("Optimizer.step#", "Optimizer.zero_grad#")):
                    opt = True
                if n.startswith(("nccl:", "gloo:")):
                    comm = True
            if setup: cause = "setup"
            elif sync: cause = "sync"
            elif data: cause = "data_loading"
            elif opt: cause = "optimizer"
            elif comm: cause = "collective"
            elif h.k == "rt" and rt_class(h.name) == "memory": cause = "memory"
            elif h.k == "rt": cause = "launch"
            else: cause = "host_compute"
            hostev = sync_ev if (cause == "sync" and sync_ev is not h and sync_ev.k != "op") else h
            o = outer if outer is not None else op
            h.info = (cause, BETWEEN_OPS if hostev.name.startswith("ProfilerStep#") else hostev.name, "" if o is None or o is hostev else o.name,
                      "" if ann is None else ann.name,
                      frame.name if frame is not None else (anyf.name if anyf is not None else ""))
        bounds = sorted({b for h in evs for b in (h.ts, h.cend)})
        starts = [h.ts for h in evs]
        prepared[t] = (evs, bounds, starts)
        return prepared[t]

    def deepest(t, x):
        """Deepest event covering instant x: the last event opened at or before x, or the first
        of its ancestors that still covers x (clamped nesting makes every event covering x an
        ancestor of that last-opened one)."""
        evs, _, starts = prepare(t)
        j = bisect.bisect_right(starts, x) - 1
        h = evs[j] if j >= 0 else None
        while h is not None and not (h.ts <= x < h.cend):
            h = h.parent
        return h

    totals = defaultdict(int)
    entries = defaultdict(int)
    gaps = 0

    def put(info, a, b):
        if b > a:
            totals[info[0]] += b - a
            entries[info] += b - a

    def split(t, a, b, generic):
        """Cut [a, b) at every event boundary of the launching threads; each slice goes to the
        deepest event of thread t, or where t has none, of the first other launching thread
        (most launches first) that has one."""
        if b <= a:
            return
        order = [t] + [u for u in threads if u != t]
        cutset = {a, b}
        for u in order:
            _, bounds, _ = prepare(u)
            cutset.update(bounds[bisect.bisect_right(bounds, a):bisect.bisect_left(bounds, b)])
        cuts = sorted(cutset)
        for x, y in zip(cuts, cuts[1:]):
            h = None
            for u in order:
                h = deepest(u, x)
                if h is not None:
                    break
            info = h.info if h is not None else ("unattributed", NOTHING, "", "", "")
            if generic is not None and info[0] in ("launch", "host_compute", "unattributed"):
                info = generic
            put(info, x, y)

    waits_by_stream = defaultdict(list)
    for w in waits:
        waits_by_stream[(w.pid, w.tid)].append(w.ts)
    for v in waits_by_stream.values():
        v.sort()

    end = None
    stream_end = {}  # (pid, tid) of a GPU stream -> latest end of its events so far
    i = 0
    while i < len(gpu):
        b = gpu[i].ts
        if end is not None and b > end:
            a = end
            gaps += 1
            g, r = gpu[i], None
            j = i
            while j < len(gpu) and gpu[j].ts == b:
                rr = launcher(gpu[j])
                if rr is not None and (r is None or rr.ts > r.ts):
                    r, g = rr, gpu[j]
                j += 1
            if r is None:
                if main is not None:
                    split(main, a, b, None)
                else:
                    put(("unattributed", NO_LAUNCHER, "", "", ""), a, b)
            else:
                t = (r.pid, r.tid)
                if r.ts <= a and r.end <= a:
                    n = deepest(t, r.ts)
                    op = n.info[2] if n is not None else ""
                    if n is not None and n.info[2] == "" and n.k == "op":
                        op = n.name
                    ann = n.info[3] if n is not None else ""
                    ws = waits_by_stream.get((g.pid, g.tid), [])
                    waited = any(r.end <= w <= b for w in ws)
                    if g.k == "kernel" and rv.is_comm(g.name):
                        put(("collective", g.name, op, ann, ""), a, b)
                    elif waited:
                        put(("stream_wait", g.name, op, ann, ""), a, b)
                    elif b - a < QUEUED_OVERHEAD:
                        put(("gpu_overhead", SWITCH, "", "", ""), a, b)
                    elif stream_end.get((g.pid, g.tid)) == a:
                        # An in-order stream starts queued work as soon as its last event ends,
                        # and no other stream ran meanwhile: the trace lacks what ran there.
                        put(("untraced", UNTRACED, "", "", ""), a, b)
                    else:
                        put(("unattributed", QUEUED, "", "", ""), a, b)
                else:
                    generic = None
                    d = deepest(t, a)
                    if d is None or d.info[0] != "sync":
                        d = deepest(t, a - SYNC_SLACK)
                    if d is not None and d.info[0] == "sync":
                        generic = d.info
                    ln = deepest(t, r.ts)
                    linfo = ln.info if ln is not None else ("unattributed", NOTHING, "", "", "")
                    if generic is None and b - a < LAUNCH_GAP and ln is not None and linfo[0] == "launch":
                        generic = linfo
                    host_end = min(b, max(a, r.end))
                    split(t, a, host_end, generic)
                    put(generic if generic is not None else linfo, host_end, b)
        end = gpu[i].end if end is None else max(end, gpu[i].end)
        k = (gpu[i].pid, gpu[i].tid)
        stream_end[k] = max(stream_end.get(k, gpu[i].end), gpu[i].end)
        i += 1

    idle = sum(totals.values())
    top = {}
    for c in CAUSES:
        es = sorted(((ns, info) for info, ns in entries.items() if info[0] == c), key=lambda x: (-x[0], x[1]))
        if es:
            top[c] = {"host_event": es[0][1][1], "op": es[0][1][2], "annotation": es[0][1][3], "ns": es[0][0]}
    return {"idle_ns": idle, "gaps": gaps, "step_ns": step_total,
            "by_cause_ns": {c: totals.get(c, 0) for c in CAUSES}, "top": top}


def check(cpp_path, trace_path):
    ref = attribute(trace_path)
    with open(cpp_path) as f:
        got = json.load(f)
    bad = []
    if ref is None:
        if got.get("present"):
            bad.append("reference found no GPU idle to attribute")
    else:
        for k in ("idle_ns", "gaps"):
            if got[k] != ref[k]:
                bad.append(f"{k}: got {got[k]}, reference {ref[k]}")
        for c in CAUSES:
            if got["by_cause_ns"].get(c, 0) != ref["by_cause_ns"][c]:
                bad.append(f"{c}: got {got['by_cause_ns'].get(c, 0)}, reference {ref['by_cause_ns'][c]}")
        for c, t in ref["top"].items():
            g = got["top"].get(c)
            if g is None or (g["host_event"], g["op"], g["annotation"], g["ns"]) != (t["host_event"], t["op"], t["annotation"], t["ns"]):
                bad.append(f"top {c}: got {g}, reference {t}")
    for b in bad:
        print(f"{trace_path}: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    for p in sys.argv[1:]:
        print(json.dumps({"trace": p, **(attribute(p) or {})}, indent=1))
