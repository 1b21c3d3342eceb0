# Polynomial regression with manual parameter updates (the shape of PyTorch's public
# "regression" example): no optimizer object, no DataLoader; each step draws a fresh batch,
# runs forward and backward and updates the weights by hand. Stops when the loss is small,
# or after argv[1] steps.
import sys

import torch
import torch.nn.functional as F

import _count

torch.manual_seed(0)
POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def get_batch(batch_size=32):
    x = make_features(torch.randn(batch_size))
    return x, x.mm(W_target) + b_target.item()


fc = torch.nn.Linear(W_target.size(0), 1)
limit = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for i in range(limit):
    batch_x, batch_y = get_batch()
    fc.zero_grad()
    loss = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss.backward()
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)
    _count.step()
    if loss.item() < 1e-3:
        break
