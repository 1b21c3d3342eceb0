# Data-starved loop for tests/run: each sample costs SAMPLE_MS in __getitem__ (sleep, so the
# cost is known) and each step "computes" for COMPUTE_MS (sleep: a stand-in for GPU work that
# holds no CPU). argv: num_workers steps sample_ms batch_size compute_ms
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

workers = int(sys.argv[1]) if len(sys.argv) > 1 else 0
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
sample_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 4
compute_ms = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0


class Slow(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        time.sleep(sample_ms / 1000.0)
        return torch.randn(16), torch.tensor(i % 2)


torch.manual_seed(0)
model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=batch, num_workers=workers)
for i, (x, y) in enumerate(loader):
    if i >= steps:
        break
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if compute_ms:
        time.sleep(compute_ms / 1000.0)
print("starved: done", flush=True)
