"""Planted bottleneck: an unfused optimizer.

AdamW with foreach=False updates 120 parameter tensors one by one, several small kernels each.
Expected finding on a GPU: unfused-optimizer (fused=True where the installed PyTorch has it,
else foreach=True).   trainscope run -- python examples/unfused_optimizer.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
width = 256 if device.type == "cuda" else 64
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(60)]).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # the planted problem
x = torch.randn(64, width, device=device)
for step in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("unfused_optimizer: done")
