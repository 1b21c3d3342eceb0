"""2-rank DDP (gloo, CPU) on a small conv net, for the live thread-oversubscription test.

Debian's torch 1.13 multiplies matrices with the single-threaded reference BLAS, so an MLP keeps
one thread per rank busy whatever torch.set_num_threads says; its convolutions run on oneDNN
(MKL-DNN) with OpenMP, which uses every intra-op thread. --threads N x 2 ranks on 2 cores is then
real oversubscription; torchrun's default (OMP_NUM_THREADS=1) is not.
    python3 -m torch.distributed.run --nproc_per_node=2 ddp_conv_threads.py --steps 40 --threads 8
"""
import argparse
import gc

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    dist.init_process_group("gloo")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(8, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 8, 48, 48)
    y = torch.randint(0, 10, (16,))
    for _ in range(a.steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    dist.barrier()
    # DDP's reference cycles would keep the gloo group alive until the interpreter's last garbage
    # collection, where PyTorch 2.13 can abort ("terminate called without an active exception":
    # gloo's worker frees its last work, which needs the GIL, during finalization). Freed here.
    del model, opt
    gc.collect()
    dist.destroy_process_group()
    if dist.is_available():
        print("ddp_conv_threads: %d steps, %d threads" % (a.steps, torch.get_num_threads()), flush=True)


if __name__ == "__main__":
    main()
