"""A model that remembers every input it saw (a debugging aid left in): 64 x 8192 floats,
2 MiB, per step, on the module itself."""
# expect: finding memory-growth
import sys

import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 160


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8192, 64)
        self.seen = []

    def forward(self, x):
        self.seen.append(x)  # expect-site: memory-growth names model.seen
        return self.proj(x)


model = Encoder()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    x = torch.randn(64, 8192)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", len(model.seen))
