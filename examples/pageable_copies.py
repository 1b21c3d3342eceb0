"""Planted bottleneck: pageable, blocking host-to-device copies.

Each batch (64 x 3 x 128 x 128 floats, 12 MB) comes from a DataLoader without pin_memory and is
copied with .to(device) without non_blocking: the copy goes through a staging buffer and blocks
the CPU. Expected finding on a GPU: pageable-memcpy (pin_memory=True + non_blocking=True).
    trainscope run -- python examples/pageable_copies.py
"""
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(512, 3, 128, 128), torch.randint(0, 10, (512,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=0, pin_memory=False)  # planted
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(16, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
while step < STEPS:
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # planted: pageable source, blocking copy
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step >= STEPS:
            break
print("pageable_copies: done")
