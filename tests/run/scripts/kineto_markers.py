# A short loop under `trainscope run` (its profiler window inside), then, after the window, a
# measure of what this PyTorch's Kineto prints: the process's fd 2 goes to a file while a profiler
# of its own starts and stops; stdout says how many lines came out at Kineto's USDT severity, and
# the file's bytes go on to the real stderr, with lines of the program's own that look like them.
# The test (agent_run_test.cpp) reads what reached trainscope's stderr.
import os
import sys
import tempfile

import torch

model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(8):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()

sys.stderr.flush()
saved = os.dup(2)
with tempfile.TemporaryFile() as f:
    os.dup2(f.fileno(), 2)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            torch.ones(3).add_(1)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
    f.seek(0)
    kineto = f.read()
print("kineto markers: %d" % sum(1 for line in kineto.splitlines() if line.startswith(b"USDT:")), flush=True)
os.write(2, kineto)
# The program's own lines: one that starts like a marker but is not Kineto's shape, a progress
# bar's redraws, a line cut off in the middle of its "USDT:" prefix at the end.
sys.stderr.write("USDT: own metric 3\n")
sys.stderr.write("progress 1/2\rprogress 2/2\n")
sys.stderr.write("kineto_markers: done\n")
sys.stderr.write("USD")
sys.stderr.flush()
