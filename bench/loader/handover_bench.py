"""The DataLoader hand-over behind diagnose/thresholds.h (kWorkerHandoverMs, kWorkerHandoverMsPerMiB).

    /usr/bin/python3 bench/loader/handover_bench.py [MiB ...]     (default 0.1 1 4 16 38 64)

Two workers are kept ahead of a loop that sleeps 120 ms between batches, so `next()` only receives a
batch that is already waiting; then one byte is read per 4 KiB page, as any use of the batch must.
Prints, per batch size, the medians of 30 batches: receiving, the first reads, their sum, and the sum
per MiB; then the least-squares line through the sums (fixed ms + ms per MiB). Run it on a quiet host
and write the load average beside the figures (docs/FINDINGS.md has this VM's).
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Ready(Dataset):
    """Samples that cost nothing to make: only the hand-over is measured."""

    def __init__(self, per_sample, n):
        self.per, self.n = per_sample, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.empty(self.per, dtype=torch.uint8)


def measure(mib, batch=32, steps=30, warm=5):
    per = max(1, int(mib * 2**20 / batch))
    dl = DataLoader(Ready(per, batch * (steps + warm)), batch_size=batch, num_workers=2, persistent_workers=True)
    it = iter(dl)
    recv, touch = [], []
    for i in range(steps + warm):
        time.sleep(0.12)
        t0 = time.perf_counter()
        b = next(it)
        t1 = time.perf_counter()
        b.view(-1)[::4096].sum().item()
        t2 = time.perf_counter()
        if i >= warm:
            recv.append(t1 - t0)
            touch.append(t2 - t1)
    med = lambda v: sorted(v)[len(v) // 2] * 1e3
    return med(recv), med(touch)


sizes = [float(a) for a in sys.argv[1:]] or [0.1, 1, 4, 16, 38, 64]
print("load average %.2f %.2f %.2f, PyTorch %s" % (os.getloadavg() + (torch.__version__,)))
xs, ys = [], []
for mib in sizes:
    r, t = measure(mib)
    xs.append(mib)
    ys.append(r + t)
    print("%6.1f MiB: receive %.3f ms, first reads %.3f ms, hand-over %.3f ms (%.3f ms/MiB)" % (mib, r, t, r + t, (r + t) / mib),
          flush=True)
if len(xs) >= 2:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print("least squares: hand-over = %.2f ms + %.3f ms per MiB" % (my - slope * mx, slope))
