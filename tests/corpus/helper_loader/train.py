"""A loop whose DataLoader is built in another module (data.py) and waits on storage."""
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms, memory-growth
import sys

import numpy as np  # noqa: F401  (the PyPI stack: numpy's wheel bundles OpenBLAS)
import torch
import torch.nn as nn

from data import build_loader

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = build_loader()
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 >= steps:
        break
print("done", loss.item())
