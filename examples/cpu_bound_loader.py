"""Planted bottleneck: loading that computes, in the training loop.

Every sample goes through ~1 ms of pure-Python "decoding" (CPU work, not waiting) and the
DataLoader has num_workers=0, so the loop waits for its own loading. Unlike data_starved.py,
worker processes cannot make this much faster on a 2-core machine: the loading needs a whole core
either way and the model's compute is tiny, so moving it to a worker only overlaps that sliver.
Expected: dataloader-starvation with no gain predicted from more workers (the report says the
loading computes), and `trainscope verify` measures about 1.0x.
    trainscope verify -- python examples/cpu_bound_loader.py 300
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Decode(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        # A pure-Python decode loop: CPU time, one core, no waiting.
        acc, row = i, []
        for k in range(64):
            for _ in range(40):
                acc = (acc * 1103515245 + 12345) & 0x7FFFFFFF
            row.append((acc % 255) / 255.0)
        return torch.tensor(row * 4, dtype=torch.float32), i % 10


def main():
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Decode(), batch_size=8, num_workers=0)  # the planted problem
    for step, (x, y) in enumerate(loader):
        if step >= STEPS:
            break
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("cpu_bound_loader: done")


if __name__ == "__main__":
    main()
