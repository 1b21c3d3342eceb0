"""An evaluation of two lines run before the first training step and again at step 20 of 40: a
validation loss over 3 batches, then a benchmark of 12 items scored one call each, every item
rendered for 10 ms first (a sleep: its time holds on a loaded machine). tests/run/agent_run_test.cpp
expects 2 spans of 15 calls, the benchmark's line with 24 calls and at least 220 ms (11 renderings a span follow its calls), and the
validation line with 6 calls."""
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
for step in range(40):
    if step % 20 == 0:
        model.eval()
        with torch.no_grad():
            for _ in range(3):
                nn.functional.cross_entropy(model(x), y)  # the validation line
            for _ in range(12):
                time.sleep(0.01)  # rendering the item
                model(x[:4])  # the benchmark line
        model.train()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
