# Two ranks under torchrun (gloo DDP) train 6 steps; then rank 1 raises, while rank 0 waits (as on
# a slow read) until torchrun stops it. So rank 1 is the only failure torchrun can observe first,
# and its traceback the only one; torchrun's own (ChildFailedError) then ends the stderr.
import time

import torch
import torch.distributed as dist

import _count

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(6):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 1:
        _count.step()
if rank == 1:
    raise ValueError("rank_raises: a bad batch at step 6")
time.sleep(120)  # torchrun ends it (SIGTERM) once rank 1 has failed
