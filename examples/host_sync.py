"""Planted bottleneck: a host sync every step.

`loss.item()` and `outputs.argmax(1).cpu()` each step make the CPU wait for the GPU to finish
before it can queue the next step's work, so the GPU idles between steps. Expected finding on a
GPU: host-sync (accumulate on the GPU and read every N steps). On a CPU-only machine .item() is
not a sync and nothing should fire.   trainscope run -- python examples/host_sync.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
width, batch = (1024, 256) if device.type == "cuda" else (256, 64)
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(batch, width, device=device)
y = torch.randint(0, 10, (batch,), device=device)
running, correct = 0.0, 0
for step in range(STEPS):
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    running += loss.item()                                  # sync 1
    correct += int((out.argmax(1).cpu() == y.cpu()).sum())  # sync 2 (and two copies)
print("host_sync: done, mean loss %.3f" % (running / STEPS))
