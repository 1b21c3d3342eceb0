# DataLoader workers started with the spawn method (the default on macOS and Windows, and what a
# forkserver start does on Linux from Python 3.14): each imports torch afresh, so the job's CPU
# peaks at start, then the loop waits on workers that sleep (storage's stand-in: 4 ms per sample).
# argv: steps workers
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(0.004)
        return torch.randn(32), i % 4


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Slow(), batch_size=16, num_workers=workers, multiprocessing_context="spawn")
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i + 1 >= steps:
            break


if __name__ == "__main__":
    main()
