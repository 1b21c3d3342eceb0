# A loop that keeps 24 MiB more every step from step 5 (a tensor appended to a list and never
# freed), 20 ms a step (a reading of the C heap at every step, however loaded the host): in a
# memory cgroup of 900 MiB the kernel's OOM killer ends it some 25 steps later
# (tests/run/oom_kill_test.sh).
import time

import torch

model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
kept = []
for step in range(200):
    opt.zero_grad()
    model(torch.randn(32, 64)).sum().backward()
    opt.step()
    time.sleep(0.02)
    if step >= 5:
        kept.append(torch.ones(24 << 20, dtype=torch.uint8))
