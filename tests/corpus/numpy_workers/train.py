"""Augmentations written with NumPy in a Dataset's __getitem__, loaded by 2 DataLoader workers.
PyTorch gives each worker one intra-op thread, but NumPy's OpenBLAS keeps its own pool of one
thread per core in every worker, so the workers' matrix products want twice the cores beside
the training loop's threads. The fix is one BLAS thread per worker (a worker_init_fn): a code
change, since no setting reaches a library's pool inside the workers. The premise is PyPI's
NumPy, whose bundled OpenBLAS starts that pool: beside Debian's PyTorch 1.13, Debian's NumPy
BLAS ran one busy thread per worker here, so the case runs on the PyPI stack only."""
# corpus: torch2-only
# corpus: serial
# expect: top thread-oversubscription
# expect: code-change thread-oversubscription
# expect: absent memory-growth
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60


class Warped(Dataset):
    """Each sample: a random 192x192 field mixed through two matrix products, then cropped."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        a = rng.random((192, 192), dtype=np.float32)
        mixed = a @ a.T @ a
        return torch.from_numpy(np.ascontiguousarray(mixed[:64, :64])).flatten(), i % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4096, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Warped(), batch_size=16, num_workers=2)  # expect-site: thread-oversubscription
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == STEPS:
            break
