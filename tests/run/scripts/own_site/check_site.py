import os

import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
print("user sitecustomize ran:", os.environ.get("USER_SITECUSTOMIZE_RAN"), flush=True)
