"""A DataLoader over an IterableDataset (records read from a stream: a short sleep each).
argv: split|unsplit NUM_WORKERS STEPS. `split`: its __iter__ takes every num_workers-th record by
get_worker_info(), as PyTorch's IterableDataset docs show; `unsplit`: it never asks, so every
worker would yield the whole stream."""
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

MODE, WORKERS, STEPS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Records(IterableDataset):
    def __iter__(self):
        shard, shards = 0, 1
        if MODE == "split":
            info = get_worker_info()
            if info is not None:
                shard, shards = info.id, info.num_workers
        for i in range(100000):
            if i % shards == shard:
                time.sleep(0.002)
                yield torch.randn(16), i % 2


loader = DataLoader(Records(), batch_size=4, num_workers=WORKERS)
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == STEPS:
        break
