"""An evaluation of two lines run before the first training step, again at step 20 of 40, and once
more after the loop (a span still open at exit): a benchmark of 12 items scored one call each,
every item rendered for 10 ms first (a sleep: its time holds on a loaded machine), then a
validation loss over 3 batches of 8192 rows. tests/run/agent_run_test.cpp expects 3 spans of 15
calls, the benchmark's line with 36 calls and >= 330 ms (11 renderings a span follow its calls),
the validation line with 9 calls, a test line after the loop with one call and no time in the loop,
the three lines' times adding up to the evaluation's; the loop's evaluate() call (line 34) once,
with the span's time, the one after the loop (39) and the inline test line (42, its own call line)
once each, outside it; the training forward (line 35) as the forward site, not step 0's."""
import time

import torch
import torch.nn as nn


def evaluate():
    model.eval()
    with torch.no_grad():
        for _ in range(12):
            time.sleep(0.01)  # rendering the item
            model(x[:4])  # the benchmark line
        for _ in range(3):
            nn.functional.cross_entropy(model(xv), yv)  # the validation line
    model.train()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
xv, yv = torch.randn(8192, 32), torch.randint(0, 4, (8192,))
for step in range(40):
    if step % 20 == 0:
        evaluate()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
evaluate()
model.eval()
with torch.no_grad():
    model(xv)  # the test line: once, after training
