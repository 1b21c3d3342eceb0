"""Batches drawn forever through a wrapper class that passes its **kwargs on to the DataLoader it
builds (the style of makemore's InfiniteDataLoader): the loader's settings are given where the
wrapper is built, the wrapper's own line only forwards them. The dataset waits on storage."""
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms, memory-growth
import sys
import time

import numpy as np  # noqa: F401  (the PyPI stack: numpy's wheel bundles OpenBLAS)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, RandomSampler


class Records(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.003)  # a read from network storage: the CPU waits, it does not compute
        g = torch.Generator().manual_seed(i)
        return torch.randn(64, generator=g), i % 10


class EndlessLoader:
    """Batches without end: a DataLoader over a sampler that draws with replacement."""

    def __init__(self, dataset, **kwargs):
        sampler = RandomSampler(dataset, replacement=True, num_samples=10 ** 9)
        self.loader = DataLoader(dataset, sampler=sampler, **kwargs)  # expect-site: dataloader-starvation
        self.batches = iter(self.loader)

    def next(self):
        return next(self.batches)


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
workers = 0
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
batches = EndlessLoader(Records(), batch_size=8, num_workers=workers)  # expect-site: dataloader-starvation caller
for step in range(steps):
    x, y = batches.next()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", loss.item())
