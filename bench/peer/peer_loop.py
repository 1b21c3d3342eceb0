"""The peer benchmark's loop: bench/run/overhead_loop.py's step (a DataLoader fetch, forward,
backward, SGD step, a Tensor.to, an .item() every 50 steps, plus a pure-Python spin that sets the
step time), run plain, under `trainscope run`, or with TraceML's documented three lines under its
launcher (`traceml run`): `import traceml_ai as traceml`, `traceml.init(mode="auto")` and
`with traceml.trace_step(model):` around the step (traceml-ai 0.5.0's README, "Plain PyTorch").

    peer_loop.py --spin K --steps N [--traceml]

Prints overhead_loop.py's BENCH line (median step after 20 warm-up steps, this process's CPU per step).
"""
import argparse
import contextlib
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
from overhead_loop import make, spin  # noqa: E402  (the same model, data and spin)

ap = argparse.ArgumentParser()
ap.add_argument("--spin", type=int, default=0)
ap.add_argument("--steps", type=int, default=1000)
ap.add_argument("--traceml", action="store_true")
a = ap.parse_args()

model, opt, loader = make()
step_scope = lambda: contextlib.nullcontext()  # noqa: E731
if a.traceml:
    import traceml_ai as traceml

    traceml.init(mode="auto")
    step_scope = lambda: traceml.trace_step(model)  # noqa: E731

times, it = [], iter(loader)
t_prev = time.perf_counter_ns()
cpu0 = 0
for step in range(a.steps):
    if step == 20:
        cpu0 = time.process_time_ns()
    with step_scope():
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        x = x.to("cpu")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 50 == 0:
            loss.item()
        spin(a.spin)
    t = time.perf_counter_ns()
    times.append((t - t_prev) / 1e6)
    t_prev = t
cpu_us = (time.process_time_ns() - cpu0) / 1e3 / max(1, a.steps - 20)
times = times[20:]
print("BENCH steps=%d median_ms=%.5f mean_ms=%.5f cpu_us=%.3f" % (len(times), statistics.median(times),
                                                                 statistics.fmean(times), cpu_us), flush=True)
