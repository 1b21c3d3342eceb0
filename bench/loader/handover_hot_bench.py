"""The fixed part of the DataLoader hand-over in a fed loop (diagnose/thresholds.h, kWorkerHandoverMs).

    python bench/loader/handover_hot_bench.py

In the steady state the model predicts, the loop computes between batches and never sleeps, so
the hand-over runs hot. Two workers make examples/data_starved.py's batch shape (8 x 256 floats
and 8 labels: two tensors, 8 KiB) at no cost, so they stay ahead; the loop spins 1, 2 or 5 ms
between batches, as a computing loop does, and `next()` only receives a batch already waiting
(queue get, unpickling, each storage's shared-memory handle fetched and mapped). Prints the
median and mean receive time of 200 batches after 20 of warm-up. bench/loader/handover_bench.py
measures the part per MiB (after 120 ms sleeps: cold, as a starved loop is).
"""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Like(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        return torch.zeros(256), i % 10


def measure(spin_s, steps=200, warm=20):
    it = iter(DataLoader(Like(), batch_size=8, num_workers=2, persistent_workers=True))
    got = []
    for i in range(steps + warm):
        t = time.perf_counter()
        while time.perf_counter() - t < spin_s:  # busy, as a computing loop is (no sleep)
            pass
        t0 = time.perf_counter()
        next(it)
        if i >= warm:
            got.append(time.perf_counter() - t0)
    got.sort()
    return got[len(got) // 2] * 1e3, sum(got) / len(got) * 1e3


print("load average %.2f %.2f %.2f, PyTorch %s" % (os.getloadavg() + (torch.__version__,)))
for spin in (0.001, 0.002, 0.005):
    print("loop busy %.0f ms between batches: receive median %.3f ms, mean %.3f ms" % ((spin * 1e3,) + measure(spin)),
          flush=True)
