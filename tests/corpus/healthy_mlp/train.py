"""A plain, healthy loop on the PyPI stack (numpy imported for the data): data in memory, fetched a
batch at a time (a BatchSampler as the sampler: one indexing per batch, not 64 plus a collate,
which cost ~1.4 ms a batch, 5-20% of this step as the machine's load varies: not healthy),
set_to_none zero_grad, the loss read every 50 steps.

Healthy in its code, not free on a CPU: its 16 MiB gradients and AdamW's single-tensor temporaries
are mapped anew by malloc every step. Measured on an idle 2-core VM (session 53, PyTorch 2.13,
its 256 batches): 22.7 ms a step as written, 15.1 ms with MALLOC_MMAP_MAX_=0
MALLOC_TRIM_THRESHOLD_=2147483647, 9.2 ms with AdamW(fused=True), 8.3 ms with both. So unfused-optimizer and page-fault-churn are true here and
neither is asserted (their size depends on the host); the findings below must stay absent."""
# expect: absent memory-growth, dataloader-starvation, cpu-bound-transforms, in-loop-io, openblas-on-intel
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 150
rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((16384, 256)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 10, 16384))
data = TensorDataset(X, Y)
loader = DataLoader(data, sampler=BatchSampler(RandomSampler(data), batch_size=64, drop_last=True), batch_size=None)
model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(step, loss.item())
    if step + 1 >= steps:
        break
