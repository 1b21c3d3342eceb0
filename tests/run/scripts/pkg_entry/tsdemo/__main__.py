# `python -m tsdemo`: the agent must see steps from a module entry point too.
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.Adam(model.parameters())
for _ in range(8):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("tsdemo: done", flush=True)
