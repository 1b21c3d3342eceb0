"""A loop prepared by Hugging Face accelerate, with a dataset that waits on storage."""
# corpus: torch2-only
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms, memory-growth
import time

import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(0.003)
        return torch.randn(32), i % 4


accelerator = Accelerator(cpu=True)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(Remote(), batch_size=8, shuffle=True)  # expect-site: dataloader-starvation
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
    if step == 59:
        break
accelerator.print("done")
