"""Keeps every step's loss for a plot at the end, after a backward with retain_graph=True (added
once to silence "Trying to backward through the graph a second time"): each kept loss keeps its
step's graph with the activations it saved (64 x 2048 floats, twice: about 1 MiB per step)."""
# expect: finding memory-growth
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 160
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def train():
    losses = []
    for step in range(steps):
        x = torch.randn(64, 512)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
        losses.append(loss)  # expect-site: memory-growth names losses
    return losses


hist = train()
print("first %.3f last %.3f" % (hist[0].item(), hist[-1].item()))
