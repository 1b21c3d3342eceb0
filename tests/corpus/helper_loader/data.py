"""The project's data module: a dataset that reads each sample from slow storage."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class ShardDataset(Dataset):
    def __init__(self, n=4096, dim=64):
        self.n, self.dim = n, dim

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(0.003)  # a network filesystem read: the CPU waits, it does not compute
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), i % 10


def build_loader(batch_size=8):
    return DataLoader(ShardDataset(), batch_size=batch_size, shuffle=True)  # expect-site: dataloader-starvation
