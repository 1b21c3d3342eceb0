"""No planted bottleneck: a compute-bound loop done right.

Data already on the device, big matmuls, bf16 autocast on a GPU, a fused (or foreach) AdamW
where the installed PyTorch has it, no per-step host syncs (the loss is read every 20 steps),
no per-step I/O. Expected: the healthy verdict (compute-bound) and no other finding.
    trainscope run -- python examples/healthy.py
"""
import contextlib
import inspect
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")


def size_for(props):
    """Width = batch, sized to the GPU so each step holds ~15 ms of bf16 matmul work.

    A step costs the host a few ms whatever the GPU (Python, launches, the profiler and agent
    hooks); with far more GPU work than that per step the host runs ahead and the GPU stays busy.
    Work: 2 square Linear layers, forward + backward = 3 x 2 x batch x width^2 FLOPs each
    (12 width^3 with batch = width). Rate: about 5 dense bf16 TFLOP/s achieved per SM (an H100
    SXM's 132 SMs peak at 989 TFLOP/s). Memory: weights, grads and AdamW state (16 bytes per
    parameter) and a few activations stay under a tenth of the device.
    """
    flops = 0.015 * props.multi_processor_count * 5e12
    w = max(1024, int((flops / 12) ** (1 / 3)) // 1024 * 1024)
    while w > 1024 and (16 * 2 + 8 * 4) * w * w > props.total_memory / 10:
        w -= 1024
    return w, w


# An H100 (132 SMs, 80 GB): 9216 x 9216; a 20-SM laptop GPU with 8 GB: 3072; the CPU: 256 x 64.
width, batch = size_for(torch.cuda.get_device_properties(0)) if cuda else (256, 64)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width),
                            torch.nn.GELU(), torch.nn.Linear(width, 10)).to(device)
params = inspect.signature(torch.optim.AdamW.__init__).parameters
kw = {"fused": True} if (cuda and "fused" in params) else ({"foreach": True} if "foreach" in params else {})
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)
x = torch.randn(batch, width, device=device)
y = torch.randint(0, 10, (batch,), device=device)
total = torch.zeros((), device=device)
for step in range(STEPS):
    # 1.13's CPU-only build refuses even a disabled CUDA autocast: no context at all on CPU.
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext():
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    total += loss.detach()
    if (step + 1) % 20 == 0:
        print("step %d mean loss %.4f" % (step + 1, (total / 20).item()))  # one sync per 20 steps
        total.zero_()
print("healthy: done")
