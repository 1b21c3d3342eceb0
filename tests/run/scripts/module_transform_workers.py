# A dataset whose transform is an nn.Module (as torchvision's Normalize and the v2 transforms are),
# loaded by one forked DataLoader worker that starts before the loop's first backward: the worker
# calls the module's forward once per sample. The loop trains 24 steps with SGD; its steps are the
# optimizer's, never the worker's forwards (pytorch/examples mnist_rnn under --set
# dataloader.num_workers=1 was measured as 25,727 "steps" of 0.3 ms).
import sys

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 24


class Normalize(torch.nn.Module):
    def forward(self, x):
        return (x - 0.5) / 0.25


class Samples(Dataset):
    def __init__(self):
        self.t = Normalize()

    def __len__(self):
        return STEPS * 8

    def __getitem__(self, i):
        return self.t(torch.full((16,), float(i % 7))), i % 2


model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ctx = "fork" if sys.platform.startswith("linux") else None
loader = DataLoader(Samples(), batch_size=8, num_workers=1, multiprocessing_context=ctx)
n = 0
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    n += 1
print("module_transform_workers: %d steps" % n, flush=True)
