"""Collects outputs for an epoch-end metric in a dict of lists, without detaching them:
64 x 2048 logits (0.5 MiB) plus their graph, every step."""
# expect: finding memory-growth
import sys
from collections import defaultdict

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ds = TensorDataset(torch.randn(64 * 256, 256), torch.randint(0, 2048, (64 * 256,)))
loader = DataLoader(ds, batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 2048))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
logs = defaultdict(list)
for step, (x, y) in enumerate(loader):
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    logs["logits"].append(logits)  # expect-site: memory-growth names logs['logits']
    logs["step"].append(step)
    if step + 1 >= steps:
        break
print("kept", len(logs["logits"]))
