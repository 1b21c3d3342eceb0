# A Lightning-style trainer: the framework calls optimizer.step(closure) and the closure runs the
# user's training_step (forward), zero_grad and backward, the way Lightning's automatic
# optimisation does. Forward and backward happen inside step(): they must count as forward and
# backward, not as optimizer time. Nor is the rest of the closure (training_step's own work:
# Lightning's self.log and hooks, here a 30 ms sleep) optimizer time: a fused update does not
# shorten it. The sleep is longer than the update could take on a loaded host, so that counting it
# as the optimizer's shows whatever the host's load.
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import _count


class LitModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                       torch.nn.ReLU(), torch.nn.Linear(256, 4))

    def forward(self, x):
        time.sleep(0.003)  # 3 ms of forward, so the split is clear
        return self.net(x)

    def training_step(self, batch):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        time.sleep(0.030)  # the step's logging and hooks
        return loss


class Trainer:
    def fit(self, model, loader, epochs):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        for _ in range(epochs):
            for batch in loader:
                def closure():
                    loss = model.training_step(batch)
                    opt.zero_grad()
                    loss.backward()
                    return loss
                opt.step(closure=closure)
                _count.step()


torch.manual_seed(0)
ds = TensorDataset(torch.randn(16 * 30, 32), torch.randint(0, 4, (16 * 30,)))
Trainer().fit(LitModel(), DataLoader(ds, batch_size=16), int(sys.argv[1]) if len(sys.argv) > 1 else 1)
