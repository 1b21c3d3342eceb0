# Warnings that PyTorch raises inside a constructor the agent wraps must name the line they name
# without trainscope (agent/trainscope_agent/warn_through.py). The test runs this script bare and
# under `trainscope run` and compares the two lines it prints: the reference is PyTorch itself.
# - Optimizer.add_param_group warns of duplicate parameters with stacklevel=3 (1.13 and 2.x): it
#   names SGD.__init__'s super().__init__ line, or the agent's Optimizer.__init__ wrapper;
# - DistributedDataParallel(..., broadcast_buffers=False) warns with stacklevel=2 from its
#   __init__ on PyTorch 2.13 (a FutureWarning): it names the DDP line here, or the agent's DDP wrapper;
# - the same SGD line twice: shown once per line under the default filter, as without trainscope.
# - an optimizer the script drops is freed at once, as without trainscope (with the collector off:
#   a frame that referred to itself kept it alive until the collector ran).
# Prints "WARNINGS <json>" (whether the agent is loaded, whether the dropped optimizer was freed,
# and category, file, line, message's start for each warning shown) after 12 training steps.
import gc
import json
import weakref
import os
import sys
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

shown = []


def show(message, category, filename, lineno, file=None, line=None):
    shown.append([category.__name__, os.path.basename(filename), lineno, str(message)[:40]])


warnings.showwarning = show  # every warning that the filters let through, at the line it names
model = nn.Linear(8, 2)
w = model.weight
gc.disable()
for _ in range(2):
    dropped = torch.optim.SGD([w, w], lr=0.1)  # duplicate parameters, warned once for this line
freed = weakref.ref(dropped)
del dropped
freed = freed() is None
gc.enable()
fd, init_file = tempfile.mkstemp()
os.close(fd)
dist.init_process_group("gloo", init_method="file://" + init_file, rank=0, world_size=1)
ddp = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randn(16, 2)
for _ in range(12):
    opt.zero_grad()
    nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()
dist.destroy_process_group()
os.unlink(init_file)
agent = "trainscope_agent" in sys.modules
print("WARNINGS " + json.dumps({"agent": agent, "freed": freed, "shown": shown}), flush=True)
