"""A plain loop that evaluates every 30 steps (a fifth of the run) and checkpoints every 50, and
times its own phases into own_times.json (run.time_account's keys). The step and the evaluation
batches are sleep-bound (a loaded machine stretches neither much)."""
# expect: finding periodic-evaluation
# expect: fix periodic-evaluation if step % (2 * EVAL_EVERY) == 0:
# corpus: own-times
# corpus: waits
import json
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

EVAL_EVERY, STEPS, EVAL_BATCHES = 30, 150, 16


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


time.sleep(1.0)  # reading and tokenising the data
X, Y = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[:512], Y[:512]), batch_size=32)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def evaluate():
    model.eval()
    with torch.no_grad():
        for i, (vx, vy) in enumerate(val):
            nn.functional.cross_entropy(model(vx), vy)  # expect-site: periodic-evaluation
            time.sleep(0.02)
            if i + 1 == EVAL_BATCHES:
                break
    model.train()


own = {"eval_s": 0.0, "checkpoint_s": 0.0, "data_wait_s": 0.0}
it = iter(train)
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
for step in range(1, STEPS + 1):
    t = time.monotonic()
    x, y = next(it)
    own["data_wait_s"] += time.monotonic() - t
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
    if step % EVAL_EVERY == 0:
        t = time.monotonic()
        evaluate()
        own["eval_s"] += time.monotonic() - t
    if step % 50 == 0:
        t = time.monotonic()
        torch.save(model.state_dict(), "checkpoint.pt")
        own["checkpoint_s"] += time.monotonic() - t
loop = time.monotonic() - t_first
own["train_steps_s"] = loop - own["eval_s"] - own["checkpoint_s"] - own["data_wait_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
