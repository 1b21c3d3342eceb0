# Trains 7 steps, then aborts (SIGABRT): with "teardown" during the interpreter's shutdown, after
# the script has returned and the atexit handlers have run (an object's finaliser, as a C++
# library's destructor would: PyTorch 2.13's gloo process group aborts a DDP rank there), with
# "now" right after step 7, mid-run. Under torchrun (RANK set) both ranks train with DDP and only
# rank 0 aborts.
import gc
import os
import sys
import time

import torch

import _count


class AbortWhenFinalised:
    def __del__(self, abort=os.abort):  # bound now: module globals are gone by then
        abort()


when = sys.argv[1]
distributed = "RANK" in os.environ
if distributed:
    import torch.distributed as dist
    dist.init_process_group("gloo")
model = torch.nn.Linear(8, 1)
if distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(7):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    _count.step()
if when == "now":
    os.abort()
if distributed:
    dist.barrier()
    del model, opt
    gc.collect()  # DDP's reference cycles would keep the gloo group alive into the teardown
    dist.destroy_process_group()
if os.environ.get("RANK", "0") == "0":
    if distributed:
        # Rank 1 leaves first, cleanly: it has nothing left to send to a rank that aborted (on a
        # loaded host 1.13's rank 1 raised "Broken pipe" when rank 0 died under it).
        time.sleep(2)
    bomb = AbortWhenFinalised()
