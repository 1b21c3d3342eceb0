"""The loop the overhead benchmark runs with and without `trainscope run`.

Each step does what the agent hooks (a DataLoader fetch, a forward through a module, a backward,
an optimizer step, a Tensor.to, a .item(); with `--closure` the forward and backward run in
step(closure), as in Lightning) plus a fixed amount of pure-Python work (`--spin K`
iterations) that sets the step time. `--calibrate MS` prints the K that makes a step take MS ms
here without the agent; both runs then use the same K, so any difference is the agent's cost.
Prints one line: BENCH steps=<n> median_ms=<..> mean_ms=<..> cpu_us=<..>, where cpu_us is this
process's CPU time (all its threads, `time.process_time_ns`) per step over the steps after
warm-up: the training process's own cost, which other work on a shared machine inflates far less
than it inflates wall time.
"""
import argparse
import statistics
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def spin(k):
    acc = 0
    for i in range(k):
        acc += i & 7
    return acc


def make():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ds = TensorDataset(torch.randn(4096, 16), torch.randint(0, 2, (4096,)))
    return model, opt, DataLoader(ds, batch_size=4, shuffle=False)


def run(k, steps, fake_cuda=False, closure=False):
    model, opt, loader = make()
    if fake_cuda:
        # The GPU's path on this CPU: CUDA made to look initialised by the counting fakes of
        # tests/run/scripts/fake_cuda.py, so the agent reads the allocator and records events as
        # it would on a GPU. The fakes themselves cost ~nothing: this measures the agent's
        # Python side of that path, not the driver calls (docs/AGENT.md).
        import os
        import sys
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "run", "scripts"))
        import fake_cuda as fc
        fc.install(torch)
    times = []
    it = iter(loader)
    t_prev = time.perf_counter_ns()
    cpu0 = 0
    for step in range(steps):
        if step == 20:
            cpu0 = time.process_time_ns()
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        x = x.to("cpu")
        if closure:  # Lightning's shape: forward, zero_grad and backward inside step(closure)
            def step_closure():
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                return loss
            loss = opt.step(step_closure)
        else:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if step % 50 == 0:
            loss.item()
        spin(k)
        t = time.perf_counter_ns()
        times.append((t - t_prev) / 1e6)
        t_prev = t
    cpu_us = (time.process_time_ns() - cpu0) / 1e3 / max(1, steps - 20)
    return times[20:], cpu_us  # warm-up out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibrate", type=float, default=0)
    ap.add_argument("--spin", type=int, default=0)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--fake-cuda", action="store_true", help="take the GPU's path (fake_cuda.py)")
    ap.add_argument("--closure", action="store_true", help="step(closure), as Lightning's automatic optimisation")
    a = ap.parse_args()
    if a.calibrate:
        base = statistics.median(run(0, 200)[0])
        t0 = time.perf_counter()
        spin(200000)
        per_iter_ms = (time.perf_counter() - t0) * 1e3 / 200000
        k = max(0, int((a.calibrate - base) / per_iter_ms))
        print("CALIBRATE spin=%d base_ms=%.4f" % (k, base), flush=True)
        return
    times, cpu_us = run(a.spin, a.steps, a.fake_cuda, a.closure)
    # proc_cpu_ms: this process's whole CPU time (import and start-up too), so a caller can tell the
    # loop's CPU from that of the processes around it (bench/run/live_view_bench.py).
    print("BENCH steps=%d median_ms=%.5f mean_ms=%.5f cpu_us=%.3f proc_cpu_ms=%.1f" % (
        len(times), statistics.median(times), statistics.fmean(times), cpu_us, time.process_time_ns() / 1e6),
        flush=True)


if __name__ == "__main__":
    main()
