"""Planted bottleneck: CPU-bound transforms.

Every sample goes through a pure-Python "augmentation" (~3 ms of CPU per sample) and the
DataLoader already uses one worker per usable core: the cores are saturated and the training
loop still waits. More workers cannot help. Expected finding: cpu-bound-transforms.
    trainscope run -- python examples/cpu_bound_transforms.py
"""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
# 8 samples per worker and batch: a step then waits for ~8 samples' work whatever the core count
# (~25-40 ms), so the loop lasts long enough for the CPU samples (0.5 s ticks) to see every core
# busy. With a fixed 16 on a 12-core host a batch came every ~7 ms, the 40 steps took 0.3 s and
# were mostly the 24 prefetched batches draining: the samples saw 40% busy, not saturation.
BATCH = 8 * CORES  # 16 on a 2-core machine, as before


class HeavyAugment(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        # A per-pixel Python loop: the kind of transform that should be cached or vectorised.
        row = [(i * 31 + k) % 255 for k in range(256)]
        for _ in range(200):
            row = [(v * 7 + 3) % 255 for v in row]
        return torch.tensor(row, dtype=torch.float32) / 255.0, i % 10


def main():
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(HeavyAugment(), batch_size=BATCH, num_workers=CORES, persistent_workers=True)
    for step, (x, y) in enumerate(loader):
        if step >= STEPS:
            break
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("cpu_bound_transforms: done")


if __name__ == "__main__":
    main()
