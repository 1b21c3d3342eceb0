"""The cost of the agent's call-site bookkeeping (agent/trainscope_agent/sites.py, leaks.py), in
process, against a baseline measured in the same run:
  - a per-call site (`.item()`, a copy, a save): sites.hit() against an empty call of the same
    shape, in ns per call, for a known key (the steady state) and over 300 distinct keys (the cap);
  - `.item()` on a CPU scalar: the agent's wrapper (counting + site) against the original;
  - a leak scan (leaks.scan) with a training loop's frame holding a growing history of 200 losses
    with their graphs and a 4096-sample dataset, in ms per scan, and per step over a 10,000-step
    run (scans at 8, 24, 56, then every doubling of the gap).
Usage: PYTHONPATH=agent .venv/bin/python bench/run/site_cost.py [repeats=5]
Never a test (timings); docs/BENCHMARKS.md, "Call sites and leak scans".
"""
import os
import sys
import time

import torch

from trainscope_agent import hooks_copy, leaks, sites
from trainscope_agent.channel import NullChannel
from trainscope_agent.state import S

R = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = 200_000


def empty(role, ns, nbytes=0, pageable=0, blocking=0, depth=2, direct=False):
    return None


def per_call(fn):
    t0 = time.perf_counter_ns()
    for _ in range(N):
        fn("item", 100)
    return (time.perf_counter_ns() - t0) / N


def item_cost():
    x = torch.tensor(1.0)
    orig = hooks_copy.item_orig
    t0 = time.perf_counter_ns()
    for _ in range(N // 4):
        orig(x)
    base = (time.perf_counter_ns() - t0) / (N // 4)
    t0 = time.perf_counter_ns()
    for _ in range(N // 4):
        x.item()
    wrapped = (time.perf_counter_ns() - t0) / (N // 4)
    return base, wrapped


def many_keys():
    # 300 distinct call lines (exec'd code objects in a user-looking file): the cap's overflow path.
    code = "\n".join("def f%d(h):\n    h('io', 10)\n" % i for i in range(300))
    ns = {}
    exec(compile(code, os.path.abspath(__file__) + ".keys.py", "exec"), ns)
    fns = [ns["f%d" % i] for i in range(300)]
    t0 = time.perf_counter_ns()
    for _ in range(N // 300):
        for f in fns:
            f(sites.hit)
    return (time.perf_counter_ns() - t0) / ((N // 300) * 300)


def scan_cost():
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    dataset = [(torch.randn(64), i % 10) for i in range(4096)]  # noqa: F841  (a local the scan walks)
    history = []
    for i in range(200):
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        history.append(torch.nn.functional.cross_entropy(model(x), y))
    t0 = time.perf_counter_ns()
    for step in (8, 24):
        leaks.scan(step)
    return (time.perf_counter_ns() - t0) / 2 / 1e6


def main():
    S.channel = NullChannel()
    S.torch = torch
    hooks_copy.install(torch)
    print("PyTorch %s, %d calls per figure, load average %s" % (torch.__version__, N, open("/proc/loadavg").read().split()[:3]))
    for r in range(R):
        base = per_call(empty)
        hit = per_call(sites.hit)
        keys = many_keys()
        ib, iw = item_cost()
        scan = scan_cost()
        scans = sum(1 for s in (8, 24, 56, 120, 248, 504, 1016, 2040, 4088, 8184) if s <= 10000)
        print("run %d: sites.hit %.0f ns/call (empty call %.0f: +%.0f ns), over 300 keys %.0f ns; "
              ".item() %.0f ns plain, %.0f ns under the agent (+%.0f); leak scan %.2f ms, %d scans in "
              "10,000 steps = %.2f us/step" % (r + 1, hit, base, hit - base, keys, ib, iw, iw - ib, scan, scans,
                                                scan * scans * 1e3 / 10000))


if __name__ == "__main__":
    main()
