"""A real PyTorch training loop for the live view's test: it prints its own lines while it trains.

    live_loop.py STEPS

Every 10th step it writes one line to stdout and one to stderr, each with its step number between
markers (<out N ... N> / <err N ... N>), stdout's in two writes with a pause between them (a line
the program is half-way through when the panel redraws). The DataLoader sleeps 20 ms per batch and
the step 20 ms more, so the panel has a data wait to show and the run lasts a few seconds.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

steps = int(sys.argv[1])
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()


class Slow(Dataset):
    def __len__(self):
        return steps * 8

    def __getitem__(self, i):
        time.sleep(0.020 / 8)
        return torch.randn(32), int(i % 4)


for step, (x, y) in enumerate(DataLoader(Slow(), batch_size=8, num_workers=0)):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    time.sleep(0.020)
    if step % 10 == 0:
        sys.stdout.write(f"<out {step} loss={loss.item():.4f} ")
        sys.stdout.flush()
        time.sleep(0.3)  # the panel redraws meanwhile (4 times a second)
        sys.stdout.write(f"{step}>\n")
        sys.stdout.flush()
        sys.stderr.write(f"<err {step} still training {step}>\n")
        sys.stderr.flush()
print("<done>", flush=True)
