"""bench/run/fused_optimizer_cpu.py [REPEATS] [STEPS]: each torch.optim class that has a fused CPU
kernel (PyTorch >= 2.4: Adam, AdamW, SGD, Adagrad), stepped over a GPT-2-small's parameter shapes
(163M parameters in 149 tensors, gradients set), single-tensor (the CPU's default), foreach and
fused, interleaved; prints each implementation's median step and the fused step's share of the
single-tensor one, the figure unfused-optimizer keeps for the fused pass (src/diagnose/thresholds.h,
kFusedOptimizerKeepsCpu*). Never a test: the figures go to docs/BENCHMARKS.md with the load average."""
import statistics
import sys
import time

import torch

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3

# GPT-2 small: token and position embeddings, 12 blocks of (2 LayerNorms, qkv, proj, fc, fc-proj with
# biases), the final LayerNorm and an untied head: 149 tensors, 163M parameters (session 46's
# AdamW figures used the model itself: 162M in 161 tensors).
D, V, T, L = 768, 50257, 1024, 12
SHAPES = [(V, D), (T, D)]
for _ in range(L):
    SHAPES += [(D,), (D,), (3 * D, D), (3 * D,), (D, D), (D,), (D,), (D,), (4 * D, D), (4 * D,), (D, 4 * D), (D,)]
SHAPES += [(D,), (D,), (V, D)]

CASES = [
    ("Adam", {}),
    ("AdamW", {}),
    ("SGD", {}),
    ("SGD", {"momentum": 0.9}),
    ("SGD", {"momentum": 0.9, "weight_decay": 1e-4}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 1e-4}),
    ("Adagrad", {}),
]
IMPLS = [("single_tensor", {"foreach": False}), ("foreach", {"foreach": True}), ("fused", {"fused": True})]


def params():
    g = torch.Generator().manual_seed(0)
    ps = [torch.nn.Parameter(torch.randn(s, generator=g) * 0.02) for s in SHAPES]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g) * 1e-3
    return ps


def step_ms(ps, cls, kw, impl_kw):
    opt = getattr(torch.optim, cls)(ps, lr=1e-3, **kw, **impl_kw)
    opt.step()  # the state (moments, momentum buffers) is made on the first step
    t0 = time.perf_counter()
    for _ in range(STEPS):
        opt.step()
    return (time.perf_counter() - t0) * 1e3 / STEPS


def main():
    ps = params()
    n = sum(p.numel() for p in ps)
    print("PyTorch %s, %d threads, %d parameters in %d tensors, %d repeats of %d steps; load average %s"
          % (torch.__version__, torch.get_num_threads(), n, len(ps), REPEATS, STEPS,
             " ".join(open("/proc/loadavg").read().split()[:3])))
    for cls, kw in CASES:
        times = {name: [] for name, _ in IMPLS}
        for _ in range(REPEATS):  # interleaved: a drift in the machine's load touches each alike
            for name, impl_kw in IMPLS:
                times[name].append(step_ms(ps, cls, kw, impl_kw))
        med = {name: statistics.median(v) for name, v in times.items()}
        label = cls + ("(" + ", ".join("%s=%s" % kv for kv in kw.items()) + ")" if kw else "")
        print("%-52s single %8.1f ms  foreach %8.1f  fused %8.1f  fused/single %.2f  runs %s"
              % (label, med["single_tensor"], med["foreach"], med["fused"], med["fused"] / med["single_tensor"],
                 " ".join("%.0f" % x for x in times["single_tensor"])))


if __name__ == "__main__":
    main()
