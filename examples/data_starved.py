"""Planted bottleneck: the GPU waits for data.

Each sample takes 4 ms to "read" (a sleep: slow storage, not CPU work) and the DataLoader has
num_workers=0, so the training loop itself waits ~32 ms for every batch of 8 while the model
needs a fraction of that. Expected finding: dataloader-starvation (the CPU is mostly idle, so
more workers fix it).   trainscope run -- python examples/data_starved.py
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SlowStorage(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.004)  # waiting on storage
        g = torch.Generator().manual_seed(i)
        return torch.randn(256, generator=g), i % 10


model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(SlowStorage(), batch_size=8, num_workers=0)  # the planted problem
for step, (x, y) in enumerate(loader):
    if step >= STEPS:
        break
    x, y = x.to(device), y.to(device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("data_starved: done")
