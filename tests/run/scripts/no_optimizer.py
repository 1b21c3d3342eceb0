# Evaluation-style loop: a DataLoader and a model, no optimizer. Steps = DataLoader fetches.
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(64 * 4, 8))
model = torch.nn.Linear(8, 2)
n = 0
with torch.no_grad():
    for (x,) in DataLoader(ds, batch_size=4):
        model(x)
        time.sleep(0.003)  # 3 ms of "work" per batch, outside the fetch
        n += 1
print("no_optimizer: %d batches" % n, flush=True)
