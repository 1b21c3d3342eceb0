"""DDP on CPU with the gloo backend: the multi-rank test job for `trainscope run -- torchrun ...`.

Run it the way users do (PyTorch 1.13 on Debian has no `torchrun` script, the module works):
    python3 -m torch.distributed.run --nproc_per_node=2 examples/ddp/train_ddp_gloo.py --steps 30
and under trainscope (per-rank table, straggler, one profiler trace per rank):
    trainscope run -- python3 -m torch.distributed.run --nproc_per_node=2 \
        examples/ddp/train_ddp_gloo.py --steps 20 --straggler-rank 1 --straggler-ms 60
(Python 3.11 + torch 1.13: torchrun's defaults crash on their own, `Std.from_str("0")` is None;
under trainscope the agent fixes that in the launcher, else pass --redirects 0:1,1:1 --tee 0:1,1:1.)

Every rank trains the same small MLP on its shard of a synthetic dataset (DistributedSampler),
DDP all-reduces the gradients after each backward. Knobs that create the multi-rank problems
trainscope must see:
  --straggler-rank R --straggler-ms MS   rank R sleeps MS in every __getitem__ batch: it is slow,
                                         the others wait for it inside the all-reduce
  --slow-node-ms MS                      every rank this command starts sleeps MS in every batch: pass
                                         it on one node of a multi-node job to make that node slow
  --threads N                            torch.set_num_threads(N) on every rank (torchrun sets
                                         OMP_NUM_THREADS=1; N x ranks > cores oversubscribes)
  --report-dir DIR                       each rank writes DIR/rank<R>.json with its own measured
                                         step times (what a test compares trainscope's numbers to)
"""
import argparse
import gc
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Synthetic(Dataset):
    def __init__(self, n, dim, slow_s):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.slow_s = slow_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __getitems__(self, idx):  # batched fetch (PyTorch >= 2.x); 1.13 ignores it
        return [self[i] for i in idx]


def collate(batch, slow_s=0.0):
    if slow_s:
        time.sleep(slow_s)  # the straggler's slow data pipeline, once per batch
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.stack(ys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--straggler-rank", type=int, default=-1)
    p.add_argument("--straggler-ms", type=float, default=0.0)
    p.add_argument("--slow-node-ms", type=float, default=0.0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--report-dir", default="")
    a = p.parse_args()

    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR/PORT come from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)

    slow_s = a.straggler_ms / 1000.0 if rank == a.straggler_rank else 0.0
    slow_s += a.slow_node_ms / 1000.0
    ds = Synthetic(a.steps * a.batch_size * world, a.dim, slow_s)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=a.batch_size, sampler=sampler, num_workers=0,
                        collate_fn=lambda b: collate(b, slow_s))
    model = DDP(nn.Sequential(nn.Linear(a.dim, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    step_s, wait_s = [], []
    t_prev = time.perf_counter()
    it = iter(loader)
    for step in range(a.steps):
        t0 = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP's all-reduce runs here: a fast rank waits for the slow one
        opt.step()
        t_end = time.perf_counter()
        step_s.append(t_end - t_prev)
        wait_s.append(t1 - t0)
        t_prev = t_end

    if a.report_dir:
        os.makedirs(a.report_dir, exist_ok=True)
        with open(os.path.join(a.report_dir, "rank%d.json" % rank), "w") as f:
            json.dump({"rank": rank, "local_rank": local_rank, "world_size": world, "pid": os.getpid(),
                       "steps": len(step_s), "step_s": step_s, "data_wait_s": wait_s,
                       "num_threads": torch.get_num_threads(),
                       "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}, f)
    dist.barrier()
    # DDP's reference cycles would keep the gloo group alive until the interpreter's last garbage
    # collection, where PyTorch 2.13 can abort ("terminate called without an active exception":
    # gloo's worker frees its last work, which needs the GIL, during finalization). Freed here.
    del model, opt
    gc.collect()
    dist.destroy_process_group()
    if rank == 0:
        print("ddp: %d ranks x %d steps done" % (world, len(step_s)), flush=True)


if __name__ == "__main__":
    main()
