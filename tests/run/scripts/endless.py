# Runs until interrupted (SIGINT test): prints READY after 5 steps so the test knows when.
import time

import torch

model = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
i = 0
while True:
    loss = model(torch.randn(16, 32)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    i += 1
    if i == 5:
        print("READY", flush=True)
    time.sleep(0.005)
