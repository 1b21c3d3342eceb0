# A Trainer-style loop where autocast is entered inside the model's forward, as accelerate does
# (`model.forward = autocast(...)(model.forward)`): the forward pre-hook sees no autocast, the
# layers inside forward run in bf16 (CPU autocast here).
import functools
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

import _count


def with_autocast(forward):
    @functools.wraps(forward)
    def wrapped(*args, **kwargs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return forward(*args, **kwargs)
    return wrapped


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
model.forward = with_autocast(model.forward)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.randn(16 * 24, 32), torch.randint(0, 4, (16 * 24,))), batch_size=16)
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        _count.step()
