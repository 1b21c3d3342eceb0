"""A short run whose data preparation (reading 60 shards from storage before the loop) takes most
of its wall time: the start-up profile names the line that waits."""
# expect: top slow-start
# expect: absent periodic-evaluation, compile-cost
# corpus: waits
import time

import torch
import torch.nn as nn


def prepare(shards):
    rows = []
    for s in range(shards):
        time.sleep(0.1)  # expect-site: slow-start
        rows.append(torch.randn(64, 32))
    return torch.cat(rows)


X = prepare(60)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(100):
    x = X[(step * 32) % 3840:][:32]
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
