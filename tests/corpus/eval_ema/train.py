"""An exponential moving average of the weights (as timm's ModelEmaV3 keeps it: a deep copy of the
model, in eval mode, updated after every optimizer step), and the average is what gets evaluated,
every 40 steps on 24 batches: about a third of the run, so that it stays above a tenth where a
loaded host stretches the training steps' compute (ctest -j4 on 2 cores: 15 -> 41 ms steps, and 12
batches fell under it). The evaluated model is never the one trained, and the copy is put in eval
mode before the first step. Steps and evaluation batches are sleep-bound. Times its own phases into
own_times.json."""
# expect: finding periodic-evaluation
# corpus: own-times
# corpus: waits
import copy
import json
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS, EVAL_EVERY, EVAL_BATCHES, DECAY = 160, 40, 24, 0.99


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(64, 256), nn.ReLU())
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.features(x))


class Ema:
    def __init__(self, model):
        self.module = copy.deepcopy(model).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for e, m in zip(self.module.parameters(), model.parameters()):
            e.lerp_(m, 1 - DECAY)


def validate(net, loader):
    net.eval()
    correct = 0
    with torch.no_grad():
        for i, (vx, vy) in enumerate(loader):
            correct += int((net(vx).argmax(1) == vy).sum())  # expect-site: periodic-evaluation
            time.sleep(0.02)
            if i + 1 == EVAL_BATCHES:
                break
    return correct


X, Y = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[:2048], Y[:2048]), batch_size=64)
model = Net()
ema = Ema(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)

own = {"eval_s": 0.0, "data_wait_s": 0.0}
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
    ema.update(model)
    time.sleep(0.015)
    if step % EVAL_EVERY == 0:
        t = time.monotonic()
        validate(ema.module, val)
        own["eval_s"] += time.monotonic() - t
own["train_steps_s"] = time.monotonic() - t_first - own["eval_s"] - own["data_wait_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
