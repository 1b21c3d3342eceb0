# A loop whose loss is NaN from its first step (weights NaN before training): every step's loss
# must count, the first included (the backward ends step 1 before the optimizer takes over).
import torch

import _count

model = torch.nn.Linear(4, 1)
with torch.no_grad():
    model.weight.fill_(float("nan"))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for i in range(12):
    loss = model(torch.randn(8, 4)).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    _count.step()
