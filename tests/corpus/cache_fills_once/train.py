"""Caches the first 30 batches' features in a dict (1 MiB each) and reuses them afterwards: the
memory rises once and stays flat. Not a leak."""
# expect: absent memory-growth
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 240
model = nn.Sequential(nn.Linear(4096, 256), nn.ReLU(), nn.Linear(256, 16))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
cache = {}
for step in range(steps):
    key = step % 30
    if key not in cache:
        cache[key] = torch.randn(64, 4096)
    x = cache[key]
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("cached", len(cache))
