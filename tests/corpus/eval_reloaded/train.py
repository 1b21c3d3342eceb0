"""Trains, keeps the best weights on disk, and at the end evaluates on the test set with a model
built again from them (`model = Net(); model.load_state_dict(torch.load(...))`, as
pytorch/examples' word_language_model reloads its best model with `torch.load`): a new module
object, the trained one freed. That test pass is about a fifth of the run: evaluation, not other
time. Once, at the end: not periodic. Times its own phases into own_times.json."""
# expect: absent periodic-evaluation
# corpus: own-times
# corpus: waits
import json
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

STEPS, TEST_BATCHES = 150, 40


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.body(x)


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


X, Y = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
test = DataLoader(TensorDataset(X[:1280], Y[:1280]), batch_size=32)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)

own = {"eval_s": 0.0, "data_wait_s": 0.0}
it = iter(train)
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
best = None
for step in range(1, STEPS + 1):
    t = time.monotonic()
    x, y = next(it)
    own["data_wait_s"] += time.monotonic() - t
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
    if best is None or loss.item() < best:
        best = loss.item()
        t = time.monotonic()
        torch.save(model.state_dict(), "best.pt")
        own.setdefault("checkpoint_s", 0.0)
        own["checkpoint_s"] += time.monotonic() - t
own["train_steps_s"] = time.monotonic() - t_first - own["data_wait_s"] - own.get("checkpoint_s", 0.0)

t = time.monotonic()
model = Net()
model.load_state_dict(torch.load("best.pt"))
model.eval()
with torch.no_grad():
    for i, (tx, ty) in enumerate(test):
        nn.functional.cross_entropy(model(tx), ty)
        time.sleep(0.02)
        if i + 1 == TEST_BATCHES:
            break
own["eval_s"] = time.monotonic() - t
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
