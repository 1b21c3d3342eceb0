"""A plain, healthy loop on the PyPI stack (numpy imported for the data): data in memory,
set_to_none zero_grad, the loss read every 50 steps."""
# expect: absent memory-growth, dataloader-starvation, cpu-bound-transforms, in-loop-io, openblas-on-intel
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 150
rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((16384, 256)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 10, 16384))
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(step, loss.item())
    if step + 1 >= steps:
        break
