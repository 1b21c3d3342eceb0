# The optimizer is rebuilt twice mid-run: at iteration 10 the old one is dropped (a new learning
# rate); at iteration 20 the old one stays alive (an LR scheduler still holds it) but stops
# stepping. argv[1] iterations in all (default 40).
import sys

import torch

import _count

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sched = None
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 40):
    if i == 10:
        opt = torch.optim.SGD(model.parameters(), lr=0.005)  # the first optimizer is dropped
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100)
    if i == 20:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # `sched` keeps the second one alive
    x = torch.randn(32, 16)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    _count.step()
