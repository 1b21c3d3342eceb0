"""Records a small PyTorch profiler trace on the CPU and writes it as Chrome-trace JSON.

Run with Debian's /usr/bin/python3 (python3-torch 1.13, built without Kineto): the trace is
then the bare-array form (`[{"name": ..., "ph": "X", "pid": "CPU functions", ...}]`, no cat).
Usage: python3 record_bare_trace.py OUT.json
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16)
y = torch.randn(8, 4)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
    for i in range(2):
        with record_function("ProfilerStep#%d" % i):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
prof.export_chrome_trace(sys.argv[1])
