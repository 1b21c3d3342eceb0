# torch.save every step: the checkpoint is ~4 MB so its cost is clearly measurable.
import os
import sys
import tempfile

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
path = os.path.join(tempfile.mkdtemp(prefix="ts-ckpt-"), "ckpt.pt")
for i in range(steps):
    x = torch.randn(8, 1024)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.save(model.state_dict(), path)
os.remove(path)
os.rmdir(os.path.dirname(path))
print("saved: done", flush=True)
