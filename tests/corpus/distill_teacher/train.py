"""Knowledge distillation: a frozen teacher, four times the student's size, runs under no_grad
inside every training step, and only the student trains. The teacher's forward is part of the
step (about half of it), not an evaluation; the model the loop trains is the student. No
evaluation at all. Times its own phases into own_times.json."""
# expect: absent periodic-evaluation
# corpus: own-times
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

STEPS, T = 250, 2.0


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


def mlp(width):
    return nn.Sequential(nn.Linear(128, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))


X, Y = torch.randn(4096, 128), torch.randint(0, 10, (4096,))
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
teacher = mlp(1024).eval()
student = mlp(512)
opt = torch.optim.AdamW(student.parameters(), lr=1e-3)

own = {"eval_s": 0.0, "data_wait_s": 0.0}
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
step = 0
while step < STEPS:
    it = iter(loader)
    while step < STEPS:
        t = time.monotonic()
        try:
            x, y = next(it)
        except StopIteration:
            own["data_wait_s"] += time.monotonic() - t
            break
        own["data_wait_s"] += time.monotonic() - t
        with torch.no_grad():
            soft = F.softmax(teacher(x) / T, dim=-1)
        s = student(x)
        loss = F.kl_div(F.log_softmax(s / T, dim=-1), soft, reduction="batchmean") * T * T + F.cross_entropy(s, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
own["train_steps_s"] = time.monotonic() - t_first - own["data_wait_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
