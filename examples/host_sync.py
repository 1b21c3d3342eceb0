"""Planted bottleneck: a host sync every step.

`loss.item()` and `outputs.argmax(1).cpu()` each step make the CPU wait for the GPU to finish
before it can queue the next step's work, so the GPU idles between steps. Expected finding on a
GPU: host-sync (accumulate on the GPU and read every N steps). On a CPU-only machine .item() is
not a sync and nothing should fire.   trainscope run -- python examples/host_sync.py
"""
import contextlib
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")


def size_for(props):
    """Width = batch for ~6 ms of bf16 GEMM work per step on this GPU.

    A sync costs the GPU the host time from the sync's return to the next step's first big
    kernel (the drain); it is the step's largest cost only when the GPU is busy the rest of the
    step, i.e. when the GPU work outlasts the host's own time per step (2-4 ms on an H100 host
    under the profiler). Work: the first Linear's forward and weight gradient, 2 x 2 x batch x
    width^2 FLOPs (4 width^3 with batch = width); ~5 bf16 TFLOP/s achieved per SM (as healthy.py);
    weights, grads, their bf16 copies and the activations (~24 bytes x width^2) under a tenth of
    the device's memory.
    """
    flops = 0.006 * props.multi_processor_count * 5e12
    w = max(1024, int((flops / 4) ** (1 / 3)) // 1024 * 1024)
    while w > 1024 and 24 * w * w > props.total_memory / 10:
        w -= 1024
    return w, w


# An H100 (132 SMs): 9216 x 9216; a 20-SM laptop GPU: 5120; the CPU: 256 x 64, fp32 as before.
width, batch = size_for(torch.cuda.get_device_properties(0)) if cuda else (256, 64)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(batch, width, device=device)
y = torch.randint(0, 10, (batch,), device=device)
running, correct = 0.0, 0
for step in range(STEPS):
    # bf16 on a GPU, so fp32-gemm is not a second planted problem; none on the CPU (1.13's
    # CPU-only build refuses even a disabled CUDA autocast).
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext():
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    running += loss.item()                                  # sync 1
    correct += int((out.argmax(1).cpu() == y.cpu()).sum())  # sync 2 (and two copies)
print("host_sync: done, mean loss %.3f" % (running / STEPS))
