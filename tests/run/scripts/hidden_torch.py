"""torch imported where trainscope's agent cannot see the import: the script takes the agent's watch
(trainscope_agent.import_watch) off sys.meta_path first, as an import system of its own that passes
Python's finders by would. It trains 20 steps and says so; the report must say the steps went
uncounted, never that the job ended before its first training step."""
import sys

sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != "trainscope_agent.import_watch"]

import torch  # noqa: E402

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for _ in range(20):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
print("TRAINED 20")
