"""DDP started with torch.multiprocessing.spawn, two ranks on gloo; each rank's loader waits on
storage (its CPU time is a few percent of its wall time) while the ranks keep the cores busy. The
wait (50 ms a sample, a batch every 200 ms with the 2 workers --set gives each rank) outlasts the
step's compute and allreduce even on a loaded machine (at 8 ms a sample, 2 workers kept up with a
step that load had stretched to 90 ms)."""
# corpus: set dataloader.num_workers=2
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms
# expect: fix dataloader-starvation 'spawn'
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Remote(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(WAIT_S)  # 50 ms: with --set num_workers=2 still a batch every 200 ms, above the step's compute here
        return torch.randn(64), i % 4


def worker(rank, world, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ds = Remote()
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank))  # expect-site: dataloader-starvation
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == STEPS:
            break
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
WAIT_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05  # per sample (the ranks see the same argv)

if __name__ == "__main__":
    mp.spawn(worker, args=(2, free_port()), nprocs=2)
