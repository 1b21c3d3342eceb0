"""The agent's "never in the way" guards, checked in one process with Debian's PyTorch 1.13 (CPU)
and fakes where 1.13 or a CPU cannot show the real thing (Dynamo tracing, CUDA graph capture,
torch.distributed's process group, Dynamo's collective remap table). The real paths are checked
on a GPU with PyTorch 2.x by the GPU issue. Prints one line per check and "GUARDS OK n" at the end;
exits 1 on the first failure."""
import atexit
import gc
import os
import shutil
import sys
import tempfile
import threading
import types
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
sys.path.insert(0, HERE)
OUT = tempfile.mkdtemp(prefix="ts_guards_")
atexit.register(shutil.rmtree, OUT, True)
os.environ["TRAINSCOPE_OUT"] = OUT
os.environ["TRAINSCOPE_PROFILE_STEPS"] = "8-9"

import torch  # noqa: E402

import agent_fakes  # noqa: E402
import trainscope_agent  # noqa: E402
from trainscope_agent import guard, hooks_dist, profiler_window  # noqa: E402
from trainscope_agent.gpu_timer import GpuTimer  # noqa: E402
from trainscope_agent.state import S  # noqa: E402


ch = agent_fakes.attach(torch)
assert not guard.G.off, guard.G.errors
check = agent_fakes.Checks(verbose=False)


def train_step(model, opt, x):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 8)

# 1. While Dynamo traces (G.compiling() true) every wrapper only calls the original: no step,
#    no accumulator touched, the results unchanged.
guard.G.compiling = lambda: True
before = (S.step, S.fwd_ns, S.bwd_ns, S.opt_ns, S.item_n, len(ch.steps))
loss = train_step(model, opt, x)
v = loss.item()
y = x.to("cpu")
check("compiling: wrappers pass straight through",
      (S.step, S.fwd_ns, S.bwd_ns, S.opt_ns, S.item_n, len(ch.steps)) == before and y is x and v == v,
      str(((S.step, S.fwd_ns, S.bwd_ns, S.opt_ns, S.item_n, len(ch.steps)), before)))
guard.G.compiling = guard._never
for _ in range(3):
    train_step(model, opt, x)
check("eager: the same loop is measured", S.step == 3 and ch.steps[-1][12] > 0, str(S.step))

# 2. resolve_compiling picks torch.compiler.is_compiling when the installed torch has it.
fake = types.SimpleNamespace(compiler=types.SimpleNamespace(is_compiling=lambda: "probe"))
saved = guard.G.compiling
guard.resolve_compiling(fake)
check("resolve_compiling: torch.compiler.is_compiling", guard.G.compiling() == "probe")
guard.G.compiling = saved

# 3. Dynamo's collective remap table is keyed on the original functions: each wrapper is added
#    under its original's entry once the table's module is loaded.
dist = torch.distributed
original = dist.all_reduce.__wrapped__
fc = types.ModuleType("torch.distributed._functional_collectives")
functional = object()
fc.traceable_collective_remaps = {original: functional}
sys.modules[fc.__name__] = fc
check("dist: remaps registered", hooks_dist.register_remaps() and
      fc.traceable_collective_remaps.get(dist.all_reduce) is functional)
del sys.modules[fc.__name__]

# 4. No CUDA event work while the current stream captures a CUDA graph.
class FakeEvent:
    made = 0

    def __init__(self, enable_timing=True):
        FakeEvent.made += 1

    def record(self):
        pass

    def query(self):
        raise RuntimeError("operation not permitted when stream is capturing")

    def elapsed_time(self, other):
        return 1.0


capturing = [True]
fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=FakeEvent, is_current_stream_capturing=lambda: capturing[0]))
t = GpuTimer(fake_torch, ch)
t.forward_start()
t.step_end(1)
t.drain(0.01)
check("capture: no event made or queried", FakeEvent.made == 0 and not t.pending)
capturing[0] = False
t.forward_start()
check("not capturing: events recorded", FakeEvent.made == 1)

# 5. A model and optimizer the user drops are not kept alive by the agent (weak references).
m2 = torch.nn.Linear(8, 1)
o2 = torch.optim.SGD(m2.parameters(), lr=0.01)
for _ in range(2):
    train_step(m2, o2, x)
rm, ro = weakref.ref(m2), weakref.ref(o2)
del m2, o2
gc.collect()
check("weak references: dropped model and optimizer are freed", rm() is None and ro() is None)
# ...and when the primary optimizer is dropped, a rebuilt one takes over at its first step.
n0 = S.step
ropt = weakref.ref(opt)
del opt
gc.collect()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_step(model, opt, x)
check("rebuilt optimizer ends the next step", ropt() is None and S.step == n0 + 1, "%d %d" % (S.step, n0))

# 6. Calls from another thread (DataParallel replicas, a logging thread) are not the loop's.
fwd0, item0 = S.fwd_ns, S.item_n


def other():
    with torch.no_grad():
        model(x)
    torch.ones(1).item()


th = threading.Thread(target=other)
th.start()
th.join()
check("other threads: no accumulator touched", S.fwd_ns == fwd0 and S.item_n == item0)

# 7. The rank comes from torch.distributed once the process group exists (mp.spawn sets no RANK).
saved_torch = S.torch
S.torch = types.SimpleNamespace(distributed=types.SimpleNamespace(
    is_available=lambda: True, is_initialized=lambda: True, get_world_size=lambda: 2, get_rank=lambda: 1))
check("rank from torch.distributed", profiler_window._rank() == 1)
S.torch = saved_torch

# 8. A profiler the program starts while our window is open: ours closes first, theirs works.
win = S.window
check("window armed", win is not None and win.first == 8)
for _ in range(20):
    if win.state not in ("idle", "learn"):  # learn: the step before the window
        break
    train_step(model, opt, x)
check("window open", win.state == "on")
with torch.profiler.profile() as prof:
    train_step(model, opt, x)
check("user profiler ran", len(prof.key_averages()) > 0)
check("our window yielded", win.state == "done" and
      any(k == "note" and "own profiler" in d.get("text", "") for k, d in ch.texts))

# 9. CUDA sync events (Kineto's cuda_sync rows) are asked for where PyTorch has the option (2.1+,
# PR pytorch/pytorch#105187): 1.13's _ExperimentalConfig rejects the keyword, so none is passed;
# a constructor that takes it is used; TRAINSCOPE_CUDA_SYNC_EVENTS=0 turns it off.
_v = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
if _v < (2, 1):
    check("sync events: PyTorch %s has no such option" % torch.__version__, profiler_window.sync_events_config(torch) is None)
else:
    check("sync events: PyTorch %s takes the option" % torch.__version__, profiler_window.sync_events_config(torch) is not None)


class _Cfg21:
    def __init__(self, **kw):
        self.kw = kw


fake21 = types.SimpleNamespace(_C=types.SimpleNamespace(_profiler=types.SimpleNamespace(_ExperimentalConfig=_Cfg21)))
cfg = profiler_window.sync_events_config(fake21)
check("sync events: asked for where the option exists", isinstance(cfg, _Cfg21) and cfg.kw == {"enable_cuda_sync_events": True})
os.environ["TRAINSCOPE_CUDA_SYNC_EVENTS"] = "0"
check("sync events: TRAINSCOPE_CUDA_SYNC_EVENTS=0 turns them off", profiler_window.sync_events_config(fake21) is None)
del os.environ["TRAINSCOPE_CUDA_SYNC_EVENTS"]
check("sync events: no experimental config at all", profiler_window.sync_events_config(types.SimpleNamespace()) is None)

check("no agent error", not guard.G.off and not guard.G.errors, str(guard.G.errors))
print("GUARDS OK %d" % check.passed, flush=True)
