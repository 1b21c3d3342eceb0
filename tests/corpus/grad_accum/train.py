"""Gradient accumulation over 4 micro-batches sliced from tensors in memory, the loss read as a
number for logging. Healthy: nothing waits, nothing is kept."""
# expect: absent memory-growth, dataloader-starvation, cpu-bound-transforms, in-loop-io
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
accum, micro = 4, 32
X, Y = torch.randn(8192, 256), torch.randint(0, 10, (8192,))
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
running = 0.0
perm = torch.randperm(len(X))
for i in range(steps * accum):
    idx = perm[(i * micro) % len(X):(i * micro) % len(X) + micro]
    loss = nn.functional.cross_entropy(model(X[idx]), Y[idx]) / accum
    loss.backward()
    running += loss.item()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
print("done", running)
