"""Keeps a detached copy of every step's output for an analysis at the end: no graph, but
64 x 800 floats (0.2 MiB) per step."""
# expect: finding memory-growth
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 800))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
outputs = []
for step in range(steps):
    x = torch.randn(64, 256)
    out = model(x)
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    outputs.append(out.detach())  # expect-site: memory-growth names outputs
print("kept", len(outputs))
