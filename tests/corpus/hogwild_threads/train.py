"""Hogwild training as the MNIST hogwild example shapes it: the model's parameters in shared
memory, two torch.multiprocessing Process trainers (spawn) updating it at once, each with its
own DataLoader and optimizer, then a test pass in the parent. Each trainer runs one intra-op
thread per core, PyTorch's default (PyPI's builds start that many; Debian's 1.13 starts one, so
the trainer asks for them), and the two together want twice the cores: their convolutions'
OpenMP threads wait for one another. The trainers start one after the other (each spawn imports torch again), so the second
warms up after the first. The loading computes a little (a per-sample normalisation) but is
small beside the threads' queue."""
# expect: top thread-oversubscription
# expect: absent dataloader-starvation, memory-growth
# corpus: openmp-spins
# corpus: serial
import os
import sys

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60


class Digits(Dataset):
    """Random 28x28 images, normalised per sample."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randint(0, 256, (n, 1, 28, 28), generator=g, dtype=torch.uint8)
        self.labels = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i].float().div(255)
        return (x - 0.13) / 0.31, int(self.labels[i])


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 5)
        self.c2 = nn.Conv2d(16, 32, 5)
        self.head = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.head(x.flatten(1))


def trainer(rank, model, data):
    torch.set_num_threads(os.cpu_count())  # PyPI PyTorch's default, whatever the build
    torch.manual_seed(rank)
    loader = DataLoader(data, batch_size=64, shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    step = 0
    while step < STEPS:
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()  # expect-site: thread-oversubscription
            opt.step()
            step += 1
            if step == STEPS:
                break


def test(model, data):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in DataLoader(data, batch_size=500):
            correct += (model(x).argmax(1) == y).sum().item()
    print("test accuracy", correct / len(data))


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = ConvNet()
    model.share_memory()
    train_data, test_data = Digits(8192, 0), Digits(2000, 1)
    procs = [mp.Process(target=trainer, args=(r, model, train_data)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    test(model, test_data)
