# Gradient accumulation: 4 micro-batches (4 backward) per optimizer step. A step is the optimizer
# step; trainscope reports K = 4.
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import _count

ACCUM = 4
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(8 * ACCUM * 25, 16), torch.randint(0, 2, (8 * ACCUM * 25,))),
                    batch_size=8)
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y) / ACCUM
        loss.backward()
        if (i + 1) % ACCUM == 0:
            opt.step()
            opt.zero_grad()
            _count.step()
