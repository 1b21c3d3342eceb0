"""FSDP2 (fully_shard) under torchrun on the CPU (gloo): a stack of narrow residual blocks, each
sharded on its own, so every block's forward and backward begins with an all-gather of its
parameters and ends with a reduce-scatter of its gradients. The blocks compute little (width 32),
so the collectives are most of the step, and the knob to name is FSDP2's own."""
# corpus: torch2-only
# corpus: run torchrun --standalone --nproc_per_node 2 train.py
# expect: top communication-bound
# expect: fix communication-bound set_requires_gradient_sync
# expect: absent dataloader-starvation, cpu-bound-transforms, memory-growth
import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.ff(self.norm(x))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    width, depth = 32, 12
    model = nn.Sequential(*[Block(width) for _ in range(depth)], nn.Linear(width, 8))
    for block in model[:depth]:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(60):
        x = torch.randn(16, width)
        y = torch.randint(0, 8, (16,))
        loss = nn.functional.cross_entropy(model(x), y)  # expect-site: communication-bound
        loss.backward()
        opt.step()
        opt.zero_grad()
    # Freed before the group: its last collectives' work must not outlive the interpreter
    # (tests/corpus/torchrun_ddp/train.py says why).
    del model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
