"""Training through a task module that holds the model, its loss and an exponential moving average
of the model's weights (as timm's train.py does since its task refactor, `--model-ema` adding the
copy to the task; as DDP does with `ddp_model(x)`), evaluating the inner model directly every
25 steps (`validate(model)`, `validate(ddp_model.module)`). The copy holds as many parameters as the
model, none of them trained: the model is not most of the task's parameters, only of its trained
ones. The evaluation (12 batches of 50 ms, 4 times: 2.4 s) is about a quarter of the run (with 20 ms
batches it was 10% of a run whose start-up a loaded host had doubled, at the rule's bar); the loop
times its own phases into own_times.json. Steps and evaluation batches are
sleep-bound (a loaded machine stretches neither much)."""
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

STEPS, EVAL_EVERY = 100, 25  # 384 validation samples: 12 batches per evaluation


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


class Task(nn.Module):
    """The model, its loss and its weights' average in one module: the loop calls task(x, y) and
    gets the loss, then task.update_ema()."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()
        self.model_ema = copy.deepcopy(model).eval()

    @torch.no_grad()
    def update_ema(self, decay=0.99):
        for e, p in zip(self.model_ema.parameters(), self.model.parameters()):
            e.lerp_(p, 1 - decay)

    def forward(self, x, y):
        return self.loss(self.model(x), y)


X, Y = torch.randn(2048, 32), torch.randint(0, 4, (2048,))
train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[:384], Y[:384]), batch_size=32)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
task = Task(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # the trained model's, not the average's


def validate(net):
    net.eval()
    correct = 0
    with torch.inference_mode():
        for vx, vy in val:
            correct += int((net(vx).argmax(1) == vy).sum())  # expect-site: periodic-evaluation
            time.sleep(0.05)
    net.train()
    return correct


own = {"eval_s": 0.0, "checkpoint_s": 0.0, "data_wait_s": 0.0}
it = iter(train)
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
for step in range(1, STEPS + 1):
    t = time.monotonic()
    x, y = next(it)
    own["data_wait_s"] += time.monotonic() - t
    loss = task(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    task.update_ema()
    time.sleep(0.02)
    if step % EVAL_EVERY == 0:
        t = time.monotonic()
        validate(model)  # the inner model, not the task
        own["eval_s"] += time.monotonic() - t
loop = time.monotonic() - t_first
own["train_steps_s"] = loop - own["eval_s"] - own["checkpoint_s"] - own["data_wait_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
