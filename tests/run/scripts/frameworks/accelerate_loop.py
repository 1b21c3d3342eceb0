"""A plain loop under Hugging Face accelerate (tests/run/frameworks_test.cpp): prepare() wraps the
model, optimizer and DataLoader; accelerator.backward() replaces loss.backward().
argv: steps num_workers mixed_precision"""
import sys

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
mixed = sys.argv[3] if len(sys.argv) > 3 else "no"

torch.manual_seed(0)
acc = Accelerator(cpu=True, mixed_precision=mixed)
model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ds = TensorDataset(torch.randn(4096, 32), torch.randint(0, 4, (4096,)))
loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=workers)
model, opt, loader = acc.prepare(model, opt, loader)
done = 0
while done < steps:
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        acc.backward(loss)
        opt.step()
        done += 1
        if done >= steps:
            break
print("accelerate_loop: done %d steps" % done, flush=True)
