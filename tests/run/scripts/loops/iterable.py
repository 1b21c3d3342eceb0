# An IterableDataset streamed through a DataLoader with 2 workers (each worker yields its own
# shard), trained with SGD.
import sys

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

import _count


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        g = torch.Generator().manual_seed(wid)
        for i in range(wid, self.n, nw):
            yield torch.randn(16, generator=g), i % 2


model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Stream(8 * 30), batch_size=8, num_workers=2)
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        _count.step()
