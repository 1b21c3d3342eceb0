"""A small real training loop that writes down, from inside its own process, every setting
`trainscope run --set` can change (tests/run/set_keys_test.cpp runs it with and without them).

    python set_probe.py OUT.json eager|compile

Its own choices, which the overrides must visibly replace: DataLoader(num_workers=0,
pin_memory=True), torch.set_num_threads(2), Adam with PyTorch's defaults, zero_grad(set_to_none=False)
(gradients kept as zeros), no autocast, no torch.compile, autograd anomaly detection on (eager). Two epochs of 8 batches. OUT.json gets
what the process itself saw: the DataLoader's attributes and the pids of the processes that made
its samples, optimizer.defaults, the thread count, whether every gradient was None right after
each zero_grad(), whether CPU autocast was on inside the model's forward (and the forward's output
dtype), whether anomaly detection was on at each step, and Dynamo's counters.
"""
import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

out_path, mode = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(2)  # the script's own call: --set threads=N must keep N
if mode == "eager":
    torch.autograd.set_detect_anomaly(True)  # left on from debugging: --set autograd.detect_anomaly=false


def autocast_on():
    try:
        return torch.is_autocast_enabled("cpu")  # PyTorch >= 2.4
    except TypeError:
        return torch.is_autocast_cpu_enabled()


class Samples(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), i % 4, os.getpid()  # the pid: which process loaded it


seen = {"autocast_in_forward": [], "forward_dtype": []}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 4)

    def forward(self, x):
        y = self.b(torch.relu(self.a(x)))
        if mode == "eager":  # compiled, a Python side effect here would only be traced once
            seen["autocast_in_forward"].append(autocast_on())
            seen["forward_dtype"].append(str(y.dtype))
        return y


model = Net()
loader = DataLoader(Samples(), batch_size=8, shuffle=False, num_workers=0, pin_memory=True)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
grads_none_after_zero_grad = []
anomaly_at_step = []
loader_pids = []
losses = []
loader_warnings = []
for epoch in range(2):
    pids = set()
    # What PyTorch warns of as the iterator starts (pin_memory=True without an accelerator, 2.x), and
    # the file it names: PyTorch's, as without trainscope, never the agent's.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = iter(loader)
    loader_warnings.extend({"file": w.filename, "message": str(w.message)} for w in caught)
    for x, y, pid in batches:
        opt.zero_grad(set_to_none=False)
        grads_none_after_zero_grad.append(all(p.grad is None for p in model.parameters()))
        anomaly_at_step.append(torch.is_anomaly_enabled())
        loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()
        pids.update(int(p) for p in pid)
        losses.append(loss.item())
    loader_pids.append(sorted(pids))
    torch.set_num_threads(2)  # again, each epoch



def refault_pages():
    """Minor page faults of a step's three 64 MiB tensors (two operands and their sum, each above
    glibc's largest mmap threshold, 32 MiB), made again after two warm-up rounds freed them: ~49 k
    (every page new) where glibc maps such blocks anew, about none where malloc reuses its heap."""
    import resource

    def step():
        (torch.ones(16 << 20) + torch.ones(16 << 20)).sum()
    step()
    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


facts = {
    "main_pid": os.getpid(),
    "refault_pages": refault_pages(),
    "loader": {"num_workers": loader.num_workers, "prefetch_factor": loader.prefetch_factor,
               "persistent_workers": loader.persistent_workers, "pin_memory": loader.pin_memory},
    "loader_pids": loader_pids,
    "optimizer_defaults": {k: opt.defaults.get(k) for k in ("foreach", "fused")},
    "threads": torch.get_num_threads(),
    "grads_none_after_zero_grad": grads_none_after_zero_grad,
    "anomaly_at_step": anomaly_at_step,
    "autocast_in_forward": seen["autocast_in_forward"],
    "forward_dtype": sorted(set(seen["forward_dtype"])),
    "losses_finite": all(l == l and abs(l) < 1e6 for l in losses),
    "steps": len(losses),
    "loader_warnings": loader_warnings,
    "accelerator": bool(getattr(torch, "accelerator", None) and torch.accelerator.is_available()),
}
if mode == "compile":
    from torch._dynamo.utils import counters
    facts["dynamo"] = {"unique_graphs": counters["stats"]["unique_graphs"],
                       "frames_ok": counters["frames"]["ok"]}
with open(out_path, "w") as f:
    json.dump(facts, f)
print("set_probe: done")
