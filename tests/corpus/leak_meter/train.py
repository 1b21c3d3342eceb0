"""A metrics helper (metrics.py) sums softmax outputs without detaching them: the running sum's
graph keeps every step's softmax output (64 x 2048 floats, 0.5 MiB) alive."""
# expect: finding memory-growth
import sys

import torch
import torch.nn as nn

from metrics import CalibrationMeter

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 2048))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
meter = CalibrationMeter(2048)
for step in range(steps):
    x, y = torch.randn(64, 128), torch.randint(0, 2048, (64,))
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    meter.update(logits)
print("calibration", meter.value()[:3])
