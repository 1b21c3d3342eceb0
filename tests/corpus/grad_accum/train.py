"""Gradient accumulation over 4 micro-batches, the loss read as a number for logging. Healthy."""
# expect: absent memory-growth, dataloader-starvation, cpu-bound-transforms, in-loop-io
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
accum = 4
ds = TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
running = 0.0
for i, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y) / accum
    loss.backward()
    running += loss.item()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
        if (i + 1) // accum >= steps:
            break
print("done", running)
