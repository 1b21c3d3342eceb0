"""Which fetches the agent measures (load_cost.py, COST_SHARE): measuring a batch's CPU and run
delay costs four clock reads (two of them /proc reads), as much as a fetch of a few tens of us, so
a fast loader has one batch in k measured (k at most MAX_EVERY), a slow one every batch. Run under
the agent with a channel that keeps its records (agent_fakes.py):
  - fast: an in-memory TensorDataset, batches of 4 (tens of us a batch): the first 16 measured,
    then between a sixteenth and a half of the rest, and the sample still says the loading
    computes (its CPU share);
  - slow: a dataset that computes ~20 ms a batch: every batch measured (the cost is far under 1%)
    but the first few, which the fast loader's last choice may still skip;
  - the choice itself (load_cost.measured): k = 1 + COST_SHARE x cost / span, capped.
Prints one line per check and "LOAD COST SAMPLING OK n"; exits 1 on the first failure."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
sys.path.insert(0, HERE)
os.environ["TRAINSCOPE_PROFILE_STEPS"] = "off"

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

import agent_fakes  # noqa: E402
from trainscope_agent import load_cost  # noqa: E402

ch = agent_fakes.attach(torch)
check = agent_fakes.Checks()
torch.set_num_threads(1)


class Computes(Dataset):
    """~20 ms of CPU a batch of 4 (a Python loop: no sleep, no I/O)."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        t = time.thread_time_ns() + 5_000_000
        acc = 0
        while time.thread_time_ns() < t:
            acc += 1
        return torch.full((8,), float(acc % 7))


def totals():
    t = load_cost._Totals
    return t.batches, t.wall, t.cpu, t.delay


def fetch_all(loader, n):
    it = iter(loader)
    for _ in range(n):
        next(it)


# The choice, on its own (no clocks): a 20 us fetch whose measuring cost 10 us skips 15; a 2 ms one
# skips none; a span of 0 (a clock that did not move) skips the most.
load_cost._Totals.batches = load_cost.EVERY  # past the first fetches, which are all measured
load_cost.Every.cost = 0
for span, cost, left in ((20_000, 10_000, load_cost.MAX_EVERY - 1), (2_000_000, 10_000, 0),
                         (500_000, 10_000, 2), (0, 10_000, load_cost.MAX_EVERY - 1)):
    load_cost.Every.cost = cost
    load_cost.measured(span, cost)
    check("k_for_%d_ns" % span, load_cost.Every.left == left, "left %d, want %d" % (load_cost.Every.left, left))
# A measurement whose thread lost its core (a 4 ms tick) moves the usual cost by at most 3/8 of it.
load_cost.Every.cost = 10_000
load_cost.measured(2_000_000, 4_000_000)
check("cost_resists_a_preemption", load_cost.Every.cost == 13_750 and load_cost.Every.left == 0,
      "cost %d ns, left %d" % (load_cost.Every.cost, load_cost.Every.left))
load_cost.Every.left = 0
load_cost._Totals.batches = 0

b0 = totals()
fast = DataLoader(TensorDataset(torch.randn(4096, 16), torch.randint(0, 2, (4096,))), batch_size=4)
N = 800
fetch_all(fast, N)
b1 = totals()
measured = b1[0] - b0[0]
first = load_cost.EVERY
check("fast_first_all_measured", measured >= first, "%d of %d batches measured" % (measured, N))
rest = measured - first
check("fast_then_some_measured", (N - first) // load_cost.MAX_EVERY <= rest <= (N - first) // 2,
      "%d of the next %d measured" % (rest, N - first))
share = (b1[2] - b0[2]) / max(1, (b1[1] - b0[1]) - (b1[3] - b0[3]))
check("fast_sample_computes", share >= 0.5, "CPU share %.2f of the measured batches" % share)

slow = DataLoader(Computes(), batch_size=4)
M = 40
fetch_all(slow, M)
b2 = totals()
check("slow_all_measured", b2[0] - b1[0] >= M - load_cost.MAX_EVERY, "%d of %d batches measured" % (b2[0] - b1[0], M))
check("slow_measures_the_next", load_cost.Every.left == 0, "%d to skip" % load_cost.Every.left)
share = (b2[2] - b1[2]) / max(1, (b2[1] - b1[1]) - (b2[3] - b1[3]))
check("slow_computes", share >= 0.5, "CPU share %.2f" % share)
sent = [t for k, t in ch.texts if k == "load_cpu"]
check("totals_sent", bool(sent) and sent[-1]["batches"] <= b2[0], str(sent[-1:] if sent else "none"))
print("LOAD COST SAMPLING OK %d" % check.passed)
