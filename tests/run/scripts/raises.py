# Trains a few steps, then raises: the exit status must pass through and the report still exist.
import sys

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(6):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("raises: about to fail", flush=True)
raise RuntimeError("planted failure after 6 steps")
