# Three epochs over a DataLoader with two spawned workers: without persistent_workers each epoch's
# iterator starts its workers again (three starts), with it the one iterator keeps them (one).
# argv[1]: "persistent" or "per-epoch".
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Small(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(16), i % 4


if __name__ == "__main__":
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Small(), batch_size=8, num_workers=2, persistent_workers=sys.argv[1] == "persistent",
                        multiprocessing_context="spawn")
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
