"""A real PyTorch training loop whose step time is set by sleeps, for the regression gate's tests.

    sleep_step.py STEPS STEP_SLEEP_MS [DATA_SLEEP_MS]

Each step trains a small MLP on one batch (forward, backward, SGD step) and sleeps STEP_SLEEP_MS
in the loop body. With DATA_SLEEP_MS the batches come from a DataLoader (num_workers=0) whose
dataset sleeps that long per batch instead: the same step time, now spent waiting for data. A
sleep-bound step is what a loaded machine cannot stretch much, so a planted slowdown (a longer
sleep) shows as itself, and equal sleeps compare equal.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

steps = int(sys.argv[1])
step_sleep = float(sys.argv[2]) / 1000.0
data_sleep = float(sys.argv[3]) / 1000.0 if len(sys.argv) > 3 else 0.0
BS = 16

# One thread: on a busy machine an intra-op pool waits for its threads at every operator
# (OpenMP barriers), which would put the load into the step instead of the sleep.
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()


class SlowSamples(Dataset):
    """One batch's worth of loading time spread over its samples."""

    def __len__(self):
        return steps * BS

    def __getitem__(self, i):
        time.sleep(data_sleep / BS)
        return torch.randn(32), int(i % 4)


if data_sleep > 0:
    batches = iter(DataLoader(SlowSamples(), batch_size=BS, num_workers=0))
else:
    fixed = [(torch.randn(BS, 32), torch.randint(0, 4, (BS,))) for _ in range(8)]
    batches = (fixed[i % len(fixed)] for i in range(steps))

for step, (x, y) in enumerate(batches):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step_sleep > 0:
        time.sleep(step_sleep)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
print("done", flush=True)
