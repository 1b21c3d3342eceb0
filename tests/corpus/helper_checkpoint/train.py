"""A loop that checkpoints after every step through a helper module, with its optimizer built
in another: the time goes to torch.save, at the helper's line."""
# expect: top in-loop-io
# expect: absent memory-growth
import sys
import tempfile

import torch
import torch.nn as nn

from checkpointing import save_checkpoint
from optim_setup import make_optimizer

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
opt = make_optimizer(model)
out_dir = tempfile.mkdtemp(prefix="corpus-ckpt-")
for step in range(steps):
    x = torch.randn(4, 1024)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    save_checkpoint(model, opt, step, out_dir)
print("done")
