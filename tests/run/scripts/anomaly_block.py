"""Anomaly detection turned on for forward and backward only, each step, in a `detect_anomaly()`
block; the optimizer steps after the block, where it is off again (so the step boundary never
sees it on). 40 steps of a small MLP; tests/run/agent_run_test.cpp expects anomaly-detection at
the block's line, measured over one step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(128, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 256), nn.GELU(),
                      nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))
for step in range(40):
    with torch.autograd.detect_anomaly():  # the block
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
    opt.step()
