"""The worker's part of the DataLoader hand-over, per MiB (diagnose/thresholds.h,
kWorkerCollateMsPerMiB).

    python bench/loader/worker_collate_bench.py [MiB ...]   (default: 1 4 16 64)

Inside a worker process, default_collate allocates each batched tensor in shared memory (so the
main process can map it) and copies the samples into it: every page of the new segment is faulted
in and zeroed by the kernel, then written. That is CPU time the worker spends per batch on top of
loading its samples, and in-process loading (num_workers=0) never pays it, so the loop's measured
collate cannot stand for it. One worker builds 16-sample uint8 batches of the given size from
ready-made samples and times default_collate with the thread's CPU clock and the wall clock; the
loop takes a batch every 50 ms, so the worker never competes with it. Prints the medians of 35
batches after 5 of warm-up, then the least-squares slope per MiB. Never a test.
"""
import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data._utils.collate import default_collate

N = 16  # samples per batch


class Ready(Dataset):
    def __init__(self, mib):
        self.numel = mib * (1 << 20) // N

    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        return torch.full((self.numel,), i % 251, dtype=torch.uint8)


def timed_collate(batch):
    cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
    out = default_collate(batch)
    return out, time.thread_time_ns() - cpu, time.perf_counter_ns() - wall


def measure(mib, batches=40, warm=5):
    it = iter(DataLoader(Ready(mib), batch_size=N, num_workers=1, collate_fn=timed_collate, prefetch_factor=1))
    cpu, wall = [], []
    for i in range(batches):
        _, c, w = next(it)
        if i >= warm:
            cpu.append(c / 1e6)
            wall.append(w / 1e6)
        time.sleep(0.05)
    return statistics.median(cpu), statistics.median(wall)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [1, 4, 16, 64]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"PyTorch {torch.__version__}, load average {load}")
    xs, ys = [], []
    for mib in sizes:
        c, w = measure(mib)
        xs.append(mib)
        ys.append(c)
        print(f"{mib:4d} MiB: collate in a worker, CPU {c:.2f} ms, wall {w:.2f} ms")
    if len(xs) >= 2:
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"slope {slope:.3f} ms CPU per MiB, intercept {my - slope * mx:.2f} ms")


if __name__ == "__main__":
    main()
