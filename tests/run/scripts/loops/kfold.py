# K-fold cross validation in the shape of Lightning's examples/fabric/kfold_cv: one model and one
# optimizer per fold, all built before the first fold and all kept alive; each fold trains its own
# model. Each model's forward sleeps 2 ms, so a forward the agent no longer sees (it kept timing
# the first fold's model) shows as 0 ms. argv[1] folds (default 3), argv[2] iterations per fold
# (default 40).
import sys
import time

import torch

import _count


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def forward(self, x):
        time.sleep(0.002)
        return self.body(x)


torch.manual_seed(0)
folds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
per_fold = int(sys.argv[2]) if len(sys.argv) > 2 else 40
models = [Net() for _ in range(folds)]
optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]
for fold in range(folds):
    model, opt = models[fold], optimizers[fold]
    model.train()
    for i in range(per_fold):
        x = torch.randn(32, 16)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        _count.step()
    model.eval()
    with torch.no_grad():  # the fold's validation
        model(torch.randn(256, 16))
