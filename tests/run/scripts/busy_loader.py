# A loader that computes in short fetches: each sample does WORK rounds of pure-Python arithmetic
# (a fixed amount of CPU, whatever else runs; ~50 us per 300 rounds here; no clock is read, since
# reading the thread's CPU clock makes the kernel update the very counters under test), and each
# step sleeps COMPUTE_MS (a stand-in for GPU work), so the loading thread sleeps between fetches
# shorter than a scheduler tick.
# argv: num_workers steps work batch_size compute_ms
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

workers = int(sys.argv[1]) if len(sys.argv) > 1 else 0
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
work = int(sys.argv[3]) if len(sys.argv) > 3 else 300
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 4
compute_ms = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0


class Busy(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        acc = 0
        for k in range(work):
            acc += k * k
        return torch.full((16,), float(acc % 7)), torch.tensor(i % 2)


torch.manual_seed(0)
model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Busy(), batch_size=batch, num_workers=workers)
for i, (x, y) in enumerate(loader):
    if i >= steps:
        break
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(compute_ms / 1000.0)
print("busy_loader: done", flush=True)
