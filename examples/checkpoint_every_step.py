"""Planted bottleneck: a checkpoint every step.

A model (32 MB on a GPU, 8 MB on a CPU, where matmuls are slow) is saved with torch.save after every optimizer step. Expected finding:
in-loop-io (checkpoint every N steps or at epoch end).
    trainscope run -- python examples/checkpoint_every_step.py
"""
import os
import sys
import tempfile

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
width, batch = (2048, 32) if device.type == "cuda" else (1024, 4)
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ckpt_dir = tempfile.mkdtemp(prefix="trainscope-example-")
path = os.path.join(ckpt_dir, "last.pt")
for step in range(STEPS):
    x = torch.randn(batch, width, device=device)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.save({"model": model.state_dict(), "step": step}, path)  # the planted problem
os.remove(path)
os.rmdir(ckpt_dir)
print("checkpoint_every_step: done")
