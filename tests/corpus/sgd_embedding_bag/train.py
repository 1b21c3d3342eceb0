"""A bag-of-words text classifier trained on the CPU: a large dense EmbeddingBag (every step's
gradient covers the whole table) under SGD with momentum and weight decay, the textbook recipe.
The single-tensor update (the CPU's default) makes several passes over the table each step; the
fused CPU kernel (PyTorch >= 2.4) makes one. The table's gradient (73 MiB, freed by zero_grad) and
the update's temporaries are above glibc's largest mmap threshold (32 MiB): each step maps them
anew and the kernel zeroes their pages. Measured (120 steps, median step, 2 cores): 57.6 ms;
fused=True 27.2 ms (2.1x); malloc's heap kept (MALLOC_MMAP_MAX_=0) 25.9 ms (2.2x); both 14.1 ms."""
# expect: finding unfused-optimizer
# expect: finding page-fault-churn
# expect: absent memory-growth, dataloader-starvation
# corpus: torch2-only
import sys

import numpy as np  # noqa: F401  (the PyPI stack: numpy's wheel bundles OpenBLAS)
import torch
import torch.nn as nn

VOCAB, DIM, CLASSES, BATCH, WORDS = 200_000, 96, 4, 64, 32


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def batches(steps):
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        tokens = torch.randint(0, VOCAB, (BATCH, WORDS), generator=g)
        yield tokens, tokens[:, 0] % CLASSES


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
model = BagOfWords()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)  # expect-site: unfused-optimizer
loss_fn = nn.CrossEntropyLoss()
for step, (tokens, labels) in enumerate(batches(steps)):
    loss = loss_fn(model(tokens), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.3f}")
