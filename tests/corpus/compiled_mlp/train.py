"""A torch.compile'd model, trained a few dozen steps. Healthy: nothing leaks or waits."""
# corpus: torch2-only
# expect: absent memory-growth, dataloader-starvation, cpu-bound-transforms
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
model = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    x = torch.randn(64, 256)
    loss = (model(x) - x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("done", loss.item())
