"""Planted bottleneck: fp32 matmuls on a GPU with Tensor Cores.

Large fp32 GEMMs (4096 wide, batch 2048) with no autocast: on Ampere or newer the Tensor Cores
sit idle. Expected finding on such a GPU: fp32-gemm (bf16 autocast; GradScaler only for fp16).
On a CPU nothing should fire.   trainscope run -- python examples/fp32_on_gpu.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
cuda = torch.cuda.is_available()
device = torch.device("cuda" if cuda else "cpu")
width, batch = (4096, 2048) if cuda else (256, 64)
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(batch, width, device=device)
for step in range(STEPS):
    loss = model(x).square().mean()  # fp32 end to end: the planted problem
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("fp32_on_gpu: done")
