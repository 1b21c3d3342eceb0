"""The host-to-device copies frameworks make, counted (issue 31: on an H100, `trainscope verify` of a
Lightning script said "copy.non_blocking not applied: the script made no host-to-device copy"
while Lightning copied every batch). A CPU build cannot make a CUDA tensor, so Tensor.to is given a
stand-in before the agent wraps it (said so): a copy to "cuda" returns an object that says
is_cuda, everything else is the real call. The batches then go through the frameworks' own
transfer code, unchanged: Lightning's move_data_to_device (non_blocking=True for CUDA) and
accelerate's send_to_device (non_blocking as configured), with `--set copy.non_blocking=true`
active. Prints one line per check and "COPIES OK n"; exits 1 on the first failure."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
sys.path.insert(0, HERE)
os.environ["TRAINSCOPE_PROFILE_STEPS"] = "off"
os.environ["TRAINSCOPE_SET"] = "copy.non_blocking=true"

import torch  # noqa: E402

_real_to = torch.Tensor.to


class _OnCuda:
    is_cuda = True


def _to(self, *args, **kwargs):
    d = kwargs.get("device", args[0] if args else None)
    if (isinstance(d, torch.device) and d.type == "cuda") or (isinstance(d, str) and d.startswith("cuda")):
        return _OnCuda()
    return _real_to(self, *args, **kwargs)


torch.Tensor.to = _to
torch.cuda.is_available = lambda: True  # the override asks whether CUDA can be used

import agent_fakes  # noqa: E402
from trainscope_agent import overrides  # noqa: E402
from trainscope_agent.state import S  # noqa: E402

ch = agent_fakes.attach(torch)
check = agent_fakes.Checks()
try:
    from lightning.fabric.utilities.apply_func import move_data_to_device
    from accelerate.utils import send_to_device
except ImportError as e:
    print("COPIES SKIPPED: %s (scripts/bootstrap installs lightning and accelerate)" % e)
    sys.exit(0)

model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
cuda = torch.device("cuda")
for step in range(4):
    x, y = torch.randn(32, 16), torch.randint(0, 2, (32,))
    moved = move_data_to_device((x, y), cuda)  # Lightning's batch transfer
    send_to_device({"x": x}, cuda, non_blocking=True)  # accelerate's, as prepare()'d loaders do
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
check("the frameworks' copies reached the stand-in", all(getattr(m, "is_cuda", False) for m in moved))
rec = [f for f in ch.steps if f[1] & 1]  # optimizer-ended steps
check("steps", len(rec) == 4, "%d" % len(rec))
h2d_n = [f[7] for f in rec]
h2d_bytes = [f[8] for f in rec]
pageable = [f[9] for f in rec]
blocking = [f[10] for f in rec]
per_step_bytes = 32 * 16 * 4 + 32 * 8 + 32 * 16 * 4  # Lightning's x and y, accelerate's x
check("every copy counted", h2d_n[1:] == [3, 3, 3], repr(h2d_n))
check("their bytes", h2d_bytes[1:] == [per_step_bytes] * 3, repr(h2d_bytes))
check("from pageable memory", pageable[1:] == [3, 3, 3], repr(pageable))
check("non_blocking without pinned memory still blocks", blocking[1:] == [3, 3, 3], repr(blocking))
decided = overrides._decided.get("copy.non_blocking")
check("copy.non_blocking: the copies already ask for it", decided is not None and not decided[0]
      and "already pass non_blocking=True" in decided[1] and "pin_memory=True" in decided[1], repr(decided))
check("not 'no copy'", "made no host-to-device copy" not in (decided or (0, ""))[1])
print("COPIES OK %d (torch %s)" % (check.passed, torch.__version__))
