"""A worked TARGET for `trainscope lab|loader|max-batch` (docs/LAB.md walks through it).

  trainscope lab       examples/lab/tiny_convnet.py:factory
  trainscope loader    examples/lab/tiny_convnet.py:slow_data      # 5 ms per sample, known cost
  trainscope max-batch examples/lab/tiny_convnet.py:wide_activations --memory-limit 256MiB

Synthetic images, generated per index from a seeded generator so every process sees the same data;
SAMPLE_MS (env LAB_SAMPLE_MS) adds a sleep to __getitem__: a per-sample cost that, like real decoding
in worker processes, runs in parallel across DataLoader workers; LAB_WORKER_START_MS, a worker's
start-up cost (slow_data).
"""
import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    def __init__(self, n, size=32, classes=10, sample_ms=0.0):
        self.n, self.size, self.classes, self.sample_ms = n, size, classes, sample_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.sample_ms > 0:
            time.sleep(self.sample_ms / 1000.0)
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, self.size, self.size, generator=g)
        return x, i % self.classes


def small_cnn(width=16, classes=10):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width * 2, 3, padding=1, stride=2), nn.BatchNorm2d(width * 2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width * 2, classes))


def factory():
    """The three-run lab's example: a small CNN on 32x32 images, batch 32."""
    ms = float(os.environ.get("LAB_SAMPLE_MS", "0"))
    return {
        "model": small_cnn(),
        "dataset": SyntheticImages(4096, sample_ms=ms),
        "batch_size": 32,
        "loss_fn": nn.CrossEntropyLoss(),
    }


def open_shards(worker_id):
    """A worker's start-up cost, as opening a dataset's files or connections: LAB_WORKER_START_MS
    (default 0). Every worker pays it once; respawned at each epoch, it pays it again."""
    time.sleep(float(os.environ.get("LAB_WORKER_START_MS", "0")) / 1000.0)


def slow_data():
    """The loader sweep's example: each sample costs LAB_SAMPLE_MS (default 5 ms), batch 8, and each
    worker's start LAB_WORKER_START_MS (default 0)."""
    ms = float(os.environ.get("LAB_SAMPLE_MS", "5"))
    batch = int(os.environ.get("LAB_BATCH", "8"))
    return {
        "model": small_cnn(),
        "loader": DataLoader(SyntheticImages(100000, size=16, sample_ms=ms), batch_size=batch,
                             worker_init_fn=open_shards),
        "loss_fn": nn.CrossEntropyLoss(),
    }


class Broadcast(nn.Module):
    """relu(x[..., None] * w): a (features x width) activation per sample from a few parameters. Only
    elementwise ops, so the memory a step needs is linear in the batch (no algorithm-dependent workspaces)."""

    def __init__(self, features=1024, width=256, classes=10):
        super().__init__()
        self.w = nn.Parameter(torch.randn(width) / width)
        self.head = nn.Linear(features, classes)

    def forward(self, x):
        return self.head(torch.relu(x.unsqueeze(-1) * self.w).mean(-1))


class Vectors(Dataset):
    def __init__(self, n, features=1024, classes=10):
        self.n, self.features, self.classes = n, features, classes

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.features, generator=g), i % self.classes


def wide_activations():
    """The max-batch example: ~10 K parameters, a 1 MiB activation per sample (1024 x 256 fp32), so
    the memory a training step needs grows almost only with the batch."""
    return {
        "model": Broadcast(),
        "dataset": Vectors(256),
        "batch_size": 16,
        "loss_fn": nn.CrossEntropyLoss(),
    }
