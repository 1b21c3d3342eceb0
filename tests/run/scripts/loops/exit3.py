# Trains 7 steps, then calls sys.exit(3): the status passes through and the report keeps the steps.
import sys

import torch

import _count

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(100):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    _count.step()
    if i + 1 == 7:
        print("exit3: leaving with status 3", file=sys.stderr, flush=True)
        sys.exit(3)
