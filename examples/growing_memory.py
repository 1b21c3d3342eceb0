"""Planted bottleneck: memory growing every step.

The loop keeps `loss` (a tensor with its autograd graph) in a Python list instead of
`loss.item()`: every step's activations stay alive (on a CPU two 256 x 2048 float tensors =
4 MiB per step). Expected finding: memory-growth (on CPU the agent sees it in the process RSS,
on a GPU in CUDA allocated memory).   trainscope run -- python examples/growing_memory.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")
DEPTH = 4  # hidden Linear+ReLU layers on a GPU


def size_for(props, steps):
    """Width and batch for ~8 ms of bf16 GEMM work per step, the kept graphs under a quarter of memory.

    With less GPU work than the host's own time per step (2-4 ms on an H100 host under the
    profiler) the GPU idles most of the step and that idle time, not the leak, is the largest
    cost. Work: DEPTH square Linear layers, forward + both gradients = 6 x batch x width^2 FLOPs
    each, at ~5 bf16 TFLOP/s achieved per SM (as healthy.py). Kept per step: x, x*scale's ReLU
    and each hidden ReLU's output, (2 + DEPTH) x batch x width bf16 values; over `steps` steps
    they stay under a quarter of the device, so the run shows the growth without running out.
    """
    width = 8192 if props.total_memory >= 32 * 2**30 else 4096
    flops = 0.008 * props.multi_processor_count * 5e12
    batch = int(flops / (6 * DEPTH * width * width)) // 512 * 512
    kept_per_sample = (2 + DEPTH) * width * 2 * max(steps, 1)
    batch = min(batch, int(props.total_memory / 4 / kept_per_sample) // 64 * 64)
    return width, max(64, batch)


# An H100 (132 SMs, 80 GB): 8192 wide, batch 3072, ~288 MiB kept per step; an 8 GB 20-SM laptop
# GPU: 4096, batch 512 (memory caps it). The CPU: as before, fp32, no hidden layers, 4 MiB per step.
width, batch = size_for(torch.cuda.get_device_properties(0), STEPS) if cuda else (2048, 256)
depth, dtype = (DEPTH, torch.bfloat16) if cuda else (0, torch.float32)
torch.manual_seed(0)
scale = torch.nn.Parameter(torch.ones(width, device=device, dtype=dtype))
hidden = [m for _ in range(depth) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
body = torch.nn.Sequential(*hidden).to(device, dtype)  # empty on the CPU
head = torch.nn.Linear(width, 10).to(device, dtype)
opt = torch.optim.SGD([scale, *body.parameters(), *head.parameters()], lr=0.01)
history = []
for step in range(STEPS):
    x = torch.randn(batch, width, device=device, dtype=dtype)
    y = torch.randint(0, 10, (batch,), device=device)
    h = torch.relu(x * scale)  # on a CPU 2 MiB for x*scale and 2 MiB for relu, kept by the graph
    loss = torch.nn.functional.cross_entropy(head(body(h)).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward(retain_graph=True)
    opt.step()
    history.append(loss)  # the planted leak: should be loss.item() (or loss.detach())
print("growing_memory: done, %d losses kept" % len(history))
