# A step of many small operators, as an RNN cell stepped through time in Python and an optimizer
# that calls its closure several times per step (LBFGS) make: each step here runs CALLS forward
# and backward passes of a GRU cell over T time steps. The profiler window records every one of
# them, so its events outgrow a small TRAINSCOPE_WINDOW_MIB within a step or two.
# argv: steps calls T
import sys

import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 4
T = int(sys.argv[3]) if len(sys.argv) > 3 else 200


class Stepped(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(1, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.zeros(x.size(0), 16)
        outs = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t:t + 1], h)
            outs.append(self.head(h))
        return torch.cat(outs, dim=1)


torch.manual_seed(0)
model = Stepped()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, T)
target = torch.roll(x, -1, dims=1)
for step in range(steps):
    opt.zero_grad()
    for _ in range(calls):
        loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
    opt.step()
print("done", steps)
