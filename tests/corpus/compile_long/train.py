"""The compile_short loop run for 500 sleep-bound steps: compilation is a small part of the run and
pays for itself at the speed-up PyTorch reports, so no compile-cost. Times its compilation."""
# expect: absent compile-cost
# corpus: torch2-only
# corpus: own-times
import json
import statistics
import sys
import time

import torch
import torch.nn as nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 500
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 10))
cmodel = torch.compile(model, backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
times = []
for step in range(STEPS):
    t = time.monotonic()
    loss = nn.functional.cross_entropy(cmodel(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.025)
    times.append(time.monotonic() - t)
with open("own_times.json", "w") as fh:
    json.dump({"compile_s": times[0] - statistics.median(times[1:])}, fh)
