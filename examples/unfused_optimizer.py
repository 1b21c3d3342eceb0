"""Planted bottleneck: an unfused optimizer.

AdamW with foreach=False updates 120 parameter tensors one by one, several small kernels each.
Expected finding on a GPU: unfused-optimizer (fused=True where the installed PyTorch has it,
else foreach=True); on a CPU too with PyTorch >= 2.4, whose fused CPU kernels make one pass over
each parameter.   trainscope run -- python examples/unfused_optimizer.py
"""
import contextlib
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")
LAYERS = 60


def batch_for(props, width):
    """A batch for ~20 ms of bf16 GEMM work in the forward and backward on this GPU.

    The host takes about 20 ms per step to queue the 60 layers' forward and backward under the
    profiler on an H100 host; with a batch of 64 their kernels run in ~1.5 us each, the GPU idles
    through them and launch-bound claims nearly as much of the step as the optimizer. With as much
    GPU work as that host time the forward and backward keep the GPU busy, and the optimizer's
    ~1000 tiny kernels are the idle time left. Work: 3 GEMMs of 2 x batch x width^2 FLOPs per
    layer; these thin (K = 256) bf16 GEMMs move 4 bytes per 256 multiply-adds, so ~1.5 TFLOP/s
    per SM (about half of what an H100's memory bandwidth allows them). Kept activations (bf16,
    ~4 bytes per value with the backward's) under a tenth of the device's memory.
    """
    flops = 0.020 * props.multi_processor_count * 1.5e12
    batch = 64
    while batch * 2 * LAYERS * 6 * width * width <= flops and (batch * 2) * LAYERS * width * 4 <= props.total_memory / 10:
        batch *= 2
    return batch


width = 256 if cuda else 64
# An H100 (132 SMs): batch 131072; a 20-SM 8 GB laptop GPU: 8192 (memory caps it); the CPU: 64 as before, fp32.
batch = batch_for(torch.cuda.get_device_properties(0), width) if cuda else 64
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(LAYERS)]).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # the planted problem
x = torch.randn(batch, width, device=device)
for step in range(STEPS):
    # bf16 on a GPU, so fp32-gemm is not a second planted problem; none on the CPU.
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext():
        loss = model(x).float().square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("unfused_optimizer: done")
