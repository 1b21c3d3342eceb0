"""Validation without model.eval(): a model with no dropout or batch norm behaves the same in
either mode, so many hand-written loops only wrap their validation in torch.no_grad(). It runs
every 30 steps on 16 batches of its own DataLoader (about a fifth of the run) and times its own
phases into own_times.json. A no-grad call in training mode is otherwise taken for inference that
feeds the loop (a rollout, a teacher), so what tells this one apart is where its batches come from:
a DataLoader the training steps never take a batch from."""
# expect: finding periodic-evaluation
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


def make_loader(x, y, batch_size, shuffle):
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)


time.sleep(1.0)  # reading the data
X, Y = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
train_loader = make_loader(X[512:], Y[512:], 16, True)  # both loaders built at one line
val_loader = make_loader(X[:512], Y[:512], 32, False)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


@torch.no_grad()
def validate():
    total = 0.0
    for i, (vx, vy) in enumerate(val_loader):
        total += nn.functional.cross_entropy(model(vx), vy).item()  # expect-site: periodic-evaluation
        time.sleep(0.02)
        if i + 1 == EVAL_BATCHES:
            break
    return total / EVAL_BATCHES


own = {"eval_s": 0.0, "checkpoint_s": 0.0, "data_wait_s": 0.0}
it = iter(train_loader)
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
        print("step", step, "val loss", validate())
        own["eval_s"] += time.monotonic() - t
loop = time.monotonic() - t_first
own["train_steps_s"] = loop - own["eval_s"] - own["checkpoint_s"] - own["data_wait_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
