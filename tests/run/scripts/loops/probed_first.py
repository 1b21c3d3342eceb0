# A library that asks whether torch is installed before anything imports it: datasets.config and
# transformers' is_torch_available call importlib.util.find_spec("torch"), which asks the import
# system's finders without loading torch. Hugging Face's run_clm.py imports datasets first; the
# agent's import hook used to leave at that question and never saw the real import (no step seen
# in a run of 150 Trainer steps). A plain optimizer loop follows; argv[1] steps.
import importlib.util
import sys

import _count

if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torch") is None:
    sys.exit("no torch")  # asked twice: a second probe must not end the watch either
assert "torch" not in sys.modules, "the probe imported torch"

import torch  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    _count.step()
