"""Planted bottleneck: launch-bound.

Sixty tiny layers (32 wide) on a batch of 16: each step launches hundreds of kernels that each
run for a few microseconds, so the GPU mostly waits for the CPU to launch the next one. Expected
finding on a GPU: launch-bound (torch.compile / CUDA graphs / a larger batch).
    trainscope run -- python examples/launch_bound.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
layers = []
for _ in range(60):
    layers += [torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.LayerNorm(32)]
model = torch.nn.Sequential(*layers).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32, device=device)
for step in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("launch_bound: done")
