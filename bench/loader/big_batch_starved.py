"""A data-starved loop with large batches, for checking the DataLoader model's hand-over term:
16 samples of 1 MiB (uint8) per batch, each sample waiting 4 ms on "storage", num_workers=0.

    trainscope verify --steps 120 -- /usr/bin/python3 bench/loader/big_batch_starved.py 400

The prediction holds only if the hand-over of a 16 MiB batch is counted (docs/FINDINGS.md).
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200


class Big(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.004)  # waiting on storage
        return torch.full((1 << 20,), i % 251, dtype=torch.uint8), i % 10


model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Big(), batch_size=16, num_workers=0)
for step, (x, y) in enumerate(loader):
    if step >= STEPS:
        break
    h = x.view(16, -1, 4096)[:, :, 0].float()[:, :64]  # reads every page of the batch, as any use would
    loss = torch.nn.functional.cross_entropy(model(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
