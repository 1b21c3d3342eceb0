"""Planted bottleneck: memory growing every step.

The loop keeps `loss` (a tensor with its autograd graph) in a Python list instead of
`loss.item()`: every step's activations (two 256 x 2048 float tensors = 4 MiB) stay alive. Expected
finding: memory-growth (on CPU the agent sees it in the process RSS, on a GPU in CUDA
allocated memory).   trainscope run -- python examples/growing_memory.py
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
scale = torch.nn.Parameter(torch.ones(2048, device=device))
head = torch.nn.Linear(2048, 10).to(device)
opt = torch.optim.SGD([scale, *head.parameters()], lr=0.01)
history = []
for step in range(STEPS):
    x = torch.randn(256, 2048, device=device)
    y = torch.randint(0, 10, (256,), device=device)
    h = torch.relu(x * scale)  # 2 MiB for x*scale and 2 MiB for relu, kept by the graph
    loss = torch.nn.functional.cross_entropy(head(h), y)
    opt.zero_grad(set_to_none=True)
    loss.backward(retain_graph=True)
    opt.step()
    history.append(loss)  # the planted leak: should be loss.item() (or loss.detach())
print("growing_memory: done, %d losses kept" % len(history))
