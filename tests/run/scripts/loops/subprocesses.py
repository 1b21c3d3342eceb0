# A script that starts its own Python subprocesses (a data-preparation helper that imports torch
# and runs a few optimizer steps of its own, and a plain one), then trains. The helpers get the
# agent too; the training process is still the one whose steps are reported.
import subprocess
import sys

import torch

import _count

helper = ("import torch\n"
          "m = torch.nn.Linear(4, 1); o = torch.optim.SGD(m.parameters(), lr=0.1)\n"
          "for _ in range(3):\n"
          "    o.zero_grad(); m(torch.randn(2, 4)).sum().backward(); o.step()\n"
          "print('helper done')\n")
subprocess.run([sys.executable, "-c", helper], check=True)
subprocess.run([sys.executable, "-c", "print('plain helper')"], check=True)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    _count.step()
