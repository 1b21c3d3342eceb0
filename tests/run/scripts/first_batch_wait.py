# The loop's first fetch waits for its workers to start: with the "spawn" start method (the default
# inside torch.multiprocessing.spawn's ranks, on macOS and on Windows) each worker is a new
# interpreter that imports torch before it loads a sample, seconds here. The run's account must
# count that wait as data wait, not as training steps: the first step's wait is before the first
# optimizer step takes the loop over (the first backward ended that step).
# Each worker also sleeps 0.5 s as it starts (a dataset opening its store): the first fetch waits at
# least that long on any machine, where a fast one imports torch in a few tenths of a second.
# argv: FILE (the script writes the first fetch's wait and the loop's time there, measured here),
# then the number of steps (default 30).
import json
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def open_store(worker_id):
    time.sleep(0.5)


class Small(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        return torch.randn(16), i % 4


if __name__ == "__main__":
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    model = nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Small(), batch_size=8, num_workers=3, multiprocessing_context="spawn",
                        worker_init_fn=open_store)
    batches = iter(loader)  # the workers are started here; the first fetch waits for them
    t0 = time.monotonic()
    first = None
    for step in range(steps):
        x, y = next(batches)
        if first is None:
            first = time.monotonic() - t0
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    loop = time.monotonic() - t0
    with open(sys.argv[1], "w") as f:
        json.dump({"first_fetch_s": first, "loop_s": loop}, f)
    del batches
