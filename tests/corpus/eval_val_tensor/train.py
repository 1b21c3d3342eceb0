"""Validation on a held-out set kept as one tensor, the whole of it in one call, without
model.eval() (an MLP with no dropout or batch norm behaves the same in either mode) and without a
DataLoader anywhere: training batches are random rows of a tensor, as many hand-written loops take
them. Every 25 steps, about a quarter of the run. A no-grad call in training mode is otherwise
taken for inference that feeds the loop (a rollout, a teacher): what tells this one apart is its
input, the very tensor it got before an earlier step, so the first of the 8 evaluations is the
loop's (7 of 8 counted; the first one's time, in the training steps, stays within the own-times
tolerance of their sleep-bound 3 s on a loaded host). Times its own phases into own_times.json."""
# expect: finding periodic-evaluation
# corpus: own-times
import json
import os
import time

import torch
import torch.nn as nn

STEPS, EVAL_EVERY, BATCH = 200, 25, 32


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


torch.manual_seed(0)
X_train, y_train = torch.randn(20000, 64), torch.randint(0, 10, (20000,))
X_val, y_val = torch.randn(20000, 64), torch.randint(0, 10, (20000,))
model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)

own = {"eval_s": 0.0}
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
for step in range(1, STEPS + 1):
    idx = torch.randint(0, len(X_train), (BATCH,))
    loss = nn.functional.cross_entropy(model(X_train[idx]), y_train[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.015)
    if step % EVAL_EVERY == 0:
        t = time.monotonic()
        with torch.no_grad():
            val_loss = nn.functional.cross_entropy(model(X_val), y_val).item()  # expect-site: periodic-evaluation
        own["eval_s"] += time.monotonic() - t
        print("step", step, "val loss", round(val_loss, 4))
own["train_steps_s"] = time.monotonic() - t_first - own["eval_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
