# LBFGS with a closure: every optimizer.step(closure) runs the closure (forward + backward) up to
# max_iter times. The forward and backward time inside step() belongs to forward and backward.
import sys
import time

import torch

import _count

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
x, y = torch.randn(256, 16), torch.randn(256, 1)
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=20, history_size=10,
                        tolerance_grad=0, tolerance_change=0)
calls = [0]


def closure():
    opt.zero_grad()
    time.sleep(0.002)  # 2 ms of "data work" per closure call, outside forward/backward
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    calls[0] += 1
    return loss


for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    opt.step(closure)
    _count.step()
print("closure calls %d" % calls[0], flush=True)
