# Passes over a DataLoader with workers, each way a loop can start them again. Each worker opens
# its store on its first item (a 0.8 s wait, as a remote or LMDB store's open is): a start costs
# that wait under any load, with no CPU to take from the other tests. argv[1]:
#   per-epoch      2 epochs over one loader, 2 workers: each epoch's iterator starts its workers
#                  again (2 starts, 1 restart)
#   persistent     3 epochs with persistent_workers=True: the one iterator keeps them (1 start)
#   rebuilt        the loader built inside the epoch loop, 2 epochs, 1 worker (2 starts, 1 rebuild)
#   iter-per-step  next(iter(loader)) in each of 3 steps, 1 worker (3 starts, 2 restarts)
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Small(Dataset):
    def __init__(self):
        self.store = None  # opened in each worker, on its first item

    def __len__(self):
        return 64

    def __getitem__(self, i):
        if self.store is None:
            time.sleep(0.8)
            self.store = "open"
        return torch.randn(16), i % 4


def train_step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


if __name__ == "__main__":
    mode = sys.argv[1]
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = Small()
    if mode in ("per-epoch", "persistent"):
        persistent = mode == "persistent"
        loader = DataLoader(data, batch_size=8, num_workers=2, persistent_workers=persistent)
        for epoch in range(3 if persistent else 2):
            for x, y in loader:
                train_step(model, opt, x, y)
    elif mode == "rebuilt":
        for epoch in range(2):
            loader = DataLoader(data, batch_size=8, num_workers=1)  # expect: rebuilt
            for x, y in loader:
                train_step(model, opt, x, y)
    elif mode == "iter-per-step":
        loader = DataLoader(data, batch_size=8, num_workers=1)  # expect: per-step
        for step in range(3):
            x, y = next(iter(loader))
            train_step(model, opt, x, y)
