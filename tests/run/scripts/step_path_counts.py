"""The agent's per-step path on the GPU's path, counted (issue 31): on an H100 the agent slowed each
step by 23-55% because every step called torch.cuda.memory_allocated/memory_reserved/
max_memory_allocated (each builds memory_stats() in Python) and queried the device. Here CUDA is
made to look initialised with counting fakes (fake_cuda.py: a stand-in, no GPU here), a small
training loop runs under the agent, and the steady-state steps must call:
  - nothing whose cost grows with the allocator's state (memory_stats and what is built on it);
  - no device query (current_device, device_count, properties, is_available, synchronize);
  - the raw allocator counters at most once per 50 ms of loop time (+1), and at least once;
  - at most two CUDA events recorded per step (the GPU timer's pair), and from step 16 on for
    one step in four on average: every step up to 16 has a GPU time, then the timed steps are 2-6
    apart (gpu_timer.py), each with its pair recorded and no event recorded between them.
Prints one line per check and "STEP PATH OK n"; exits 1 on the first failure."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
sys.path.insert(0, HERE)
os.environ["TRAINSCOPE_PROFILE_STEPS"] = "off"

import torch  # noqa: E402

import fake_cuda  # noqa: E402
import agent_fakes  # noqa: E402
from trainscope_agent import guard, step_path  # noqa: E402
from trainscope_agent.state import S  # noqa: E402


ch = agent_fakes.attach(torch)
check = agent_fakes.Checks()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32), torch.randint(0, 2, (8,))
fake_cuda.install(torch)  # the user's code "initialised CUDA" (after building what imports Dynamo)


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


for _ in range(5):  # warm-up: step 1 reads the settings (device name, properties) once
    step()
check("cuda path taken", S.cuda_mem is not None and S.gpu is not None,
      "cuda_mem=%r gpu=%r" % (S.cuda_mem, S.gpu))
before = fake_cuda.CALLS.copy()
steps0 = S.step
recs0 = len(ch.steps)
# 400 steps of ~0.6 ms: several readings are due over the loop. A reading that took long (the
# process preempted on a loaded host) puts the next one 100 x its cost away (step_path.py), so on
# a busy machine the loop goes on, up to 10 s, until one is taken: "never read" still fails.
N = 0
t0 = time.perf_counter()
while N < 400 or (fake_cuda.CALLS["_cuda_memoryStats"] == before["_cuda_memoryStats"] and time.perf_counter() - t0 < 10):
    step()
    time.sleep(0.0005)
    N += 1
elapsed = time.perf_counter() - t0
calls = fake_cuda.steady(before)
check("steps counted", S.step - steps0 == N, "%d" % (S.step - steps0))
check("no guard error", not guard.G.off, "; ".join(guard.G.errors))
expensive = {k: calls[k] for k in fake_cuda.EXPENSIVE if calls[k]}
check("no memory_stats-based call per step", not expensive, repr(expensive))
queries = {k: calls[k] for k in fake_cuda.DEVICE_QUERIES if calls[k]}
check("no device query per step", not queries, repr(queries))
most = int(elapsed / (step_path.MEM_EVERY_NS / 1e9)) + 1
reads = calls["_cuda_memoryStats"]
check("allocator read rate-limited", 1 <= reads <= most,
      "%d reads in %.3f s over %d steps (at most %d)" % (reads, elapsed, N, most))
check("at most two events recorded per step", calls["Event.record"] <= 2 * N, "%d" % calls["Event.record"])
# The GPU timer's sample (the fake events complete at once: each timed step's record comes at its end).
from trainscope_agent import gpu_timer  # noqa: E402
timed = [s for s, _ in ch.gpu]
first = gpu_timer.FIRST_STEPS
# From the first step CUDA was seen initialised (step 1 ends before the timer exists: step 2).
upto = [s for s in timed if s <= first]
check("every step up to %d timed" % first, timed and timed[0] <= 2 and upto == list(range(timed[0], first + 1)),
      repr(timed[:first + 2]))
gaps = [b - a for a, b in zip(timed[len(upto) - 1:], timed[len(upto):])]
lo, hi = gpu_timer.GAP
check("then timed steps %d-%d apart" % (lo, hi), gaps and all(lo <= g <= hi for g in gaps), repr(gaps[:20]))
steady_timed = sum(1 for s in timed if s > steps0)
check("two events for each timed step, none between", calls["Event.record"] == 2 * steady_timed,
      "%d events, %d timed steps of %d" % (calls["Event.record"], steady_timed, N))
check("about one step in four timed", N / hi <= steady_timed <= N / lo + first, "%d of %d" % (steady_timed, N))
check("events reused, not made per step", calls["Event"] <= 4, "%d made" % calls["Event"])
# The readings reach the step records: allocated, reserved, peak at the steps that read them.
mem = [f for f in ch.steps[recs0:] if f[18] >= 0]
check("readings in the step records", len(mem) == reads and all(
    f[18] == fake_cuda._Alloc.allocated and f[19] == fake_cuda._Alloc.reserved and f[20] == fake_cuda._Alloc.peak
    for f in mem), "%d records with a reading" % len(mem))
unread = sum(1 for f in ch.steps[recs0:] if f[18] == -1)
check("steps between readings say 'no reading'", unread == N - reads, "%d of %d" % (unread, N))
print("STEP PATH OK %d (torch %s)" % (check.passed, torch.__version__))
