"""The cost of the run's time account in the agent (agent/trainscope_agent/phases.py), in process,
each against a baseline measured in the same run (ns per call):
  - per model call: phases.is_eval_call + train_event (what _fwd_pre adds to a training forward)
    against an empty call of the same shape;
  - per fetch: phases.fetched against an empty call;
  - per step: phases.at_step (the totals at the step's end, Dynamo's compile timings read once
    torch._dynamo is imported) against an empty step hook, before and after torch.compile ran.
Usage: PYTHONPATH=agent .venv/bin/python bench/run/phases_cost.py [repeats=5]
Never a test (timings); docs/BENCHMARKS.md, "The run's time account".
"""
import sys
import time

import torch

from trainscope_agent import phases
from trainscope_agent.hooks_model import M
from trainscope_agent.phases import Ph
from trainscope_agent.channel import NullChannel
from trainscope_agent.state import S

R = int(sys.argv[1]) if len(sys.argv) > 1 else 5
N = 200_000


def timed(fn, *args):
    t0 = time.perf_counter_ns()
    for _ in range(N):
        fn(*args)
    return (time.perf_counter_ns() - t0) / N


def empty1(a):
    return None


def empty2(a, b):
    return None


def model_call(module, torch_):
    # What hooks_model._fwd_pre adds to a training forward (phases.is_eval_call and train_event, inlined).
    if not module.training or not M.grad_enabled():
        phases.eval_start(0)
    else:
        Ph.fetch_after_train = None
        if Ph.open:
            phases.close()


def step_hook(step):
    return None


def main():
    S.channel = NullChannel()
    S.torch = torch
    M.grad_enabled = torch.is_grad_enabled
    m = torch.nn.Linear(4, 4)
    print("PyTorch %s, %d calls per figure, load average %s" % (torch.__version__, N, open("/proc/loadavg").read().split()[:3]))
    for r in range(R):
        base2 = timed(empty2, m, torch)
        call = timed(model_call, m, torch)
        base1 = timed(empty1, 1000)
        fetch = timed(lambda ns: phases.fetched(0, ns), 1000)
        lam = timed(lambda ns: empty2(0, ns), 1000)
        hook0 = timed(step_hook, 17)
        step = timed(phases.at_step, 17)
        print("run %d: model call %.0f ns (empty %.0f, +%.0f) · fetch %.0f ns (empty %.0f, +%.0f) · step %.0f ns "
              "(empty hook %.0f, +%.0f)" % (r + 1, call, base2, call - base2, fetch, lam, fetch - lam, step, hook0,
                                           step - hook0))
    # After a compilation: Dynamo's timings are read at every step end.
    cm = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    cm(torch.randn(2, 4))
    for r in range(R):
        hook0 = timed(step_hook, 17)
        step = timed(phases.at_step, 17)
        print("after torch.compile, run %d: step %.0f ns (empty hook %.0f, +%.0f), compile %.3f s seen" % (
            r + 1, step, hook0, step - hook0, phases.compile_ns() / 1e9))


if __name__ == "__main__":
    main()
