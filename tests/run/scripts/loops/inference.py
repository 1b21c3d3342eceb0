# Inference over pre-batched tensors: no DataLoader, no backward, no optimizer. The steps are the
# model's repeating top-level forward (a loss-free metric module is called too, at top level).
import sys

import torch

import _count

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
softmax = torch.nn.Softmax(dim=-1)
batches = torch.randn(int(sys.argv[1]) if len(sys.argv) > 1 else 30, 16, 32)
with torch.no_grad():
    for x in batches:
        probs = softmax(model(x))
        _count.step()
