"""Steps under a whole-network CUDA graph (hooks_graph.py), checked on the CPU with fakes: a CPU
build has torch.cuda.CUDAGraph only as a dummy, so its capture_begin/capture_end/replay are
replaced by no-ops before the agent wraps them (a stand-in, said so: scripts/gpu_check's
torch2-eager cuda_graph case runs the real thing on a GPU). The loop is the PyTorch docs'
"Whole-network capture": 3 eager warm-up steps, one capture of forward + backward + step, then
g.replay() per iteration. Prints one line per check and "GRAPH STEPS OK n"; exits 1 on failure."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
sys.path.insert(0, HERE)
os.environ["TRAINSCOPE_PROFILE_STEPS"] = "off"

import torch  # noqa: E402

G_CLS = torch.cuda.CUDAGraph
replays = [0]
G_CLS.capture_begin = lambda self, *a, **k: None
G_CLS.capture_end = lambda self, *a, **k: None


def _replay(self):
    replays[0] += 1


G_CLS.replay = _replay

import agent_fakes  # noqa: E402
from trainscope_agent import guard  # noqa: E402
from trainscope_agent.state import S  # noqa: E402


ch = agent_fakes.attach(torch)
check = agent_fakes.Checks()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))


def train_step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(3):  # warm-up, eager (on a side stream in the docs' recipe)
    train_step()
check("eager warm-up steps counted", S.step == 3, "step %d" % S.step)

g = object.__new__(G_CLS)
g.capture_begin()
train_step()  # recorded into the graph, not run: no step
g.capture_end()
check("the capture is no step", S.step == 3, "step %d" % S.step)
check("no agent error", not guard.G.off, "; ".join(guard.G.errors))

for i in range(20):
    x.copy_(torch.randn(8, 16))
    g.replay()
check("every replay of the captured step is a step", S.step == 23, "step %d after 20 replays" % S.step)
check("the replays ran", replays[0] == 20)
opt_records = [f for f in ch.steps if f[1] & 1]  # F_OPTIMIZER: steps ended at the optimizer's level
check("records sent for the replayed steps", len(opt_records) == 23, "%d records" % len(opt_records))

# A partial capture (forward only, as torch.cuda.make_graphed_callables or a compiled
# reduce-overhead model): its replays are not steps; the eager optimizer step still is.
part = object.__new__(G_CLS)
part.capture_begin()
model(x)
part.capture_end()
before = S.step
for i in range(5):
    part.replay()
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
check("a partial graph's replays are not steps", S.step == before + 5, "%d steps for 5 iterations" % (S.step - before))

# --steps N ends the program at the replay after step N (SystemExit, like any other marker).
S.stop_after = S.step + 3
stopped = False
try:
    for i in range(10):
        g.replay()
except SystemExit as e:
    stopped = e.code == 0
check("--steps stops a replay loop", stopped and S.step == S.stop_after, "step %d" % S.step)
print("GRAPH STEPS OK %d (torch %s)" % (check.passed, torch.__version__))
