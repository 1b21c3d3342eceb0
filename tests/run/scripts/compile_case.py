"""A torch.compile'd training loop whose Dynamo counters and losses are compared with and without
`trainscope run` (tests/run/compile_test.cpp; issue 31: under trainscope the model compiled twice).

usage: compile_case.py BACKEND FORM STEPS OUT.json
  BACKEND  inductor | aot_eager | eager (any torch.compile backend)
  FORM     module    model = torch.compile(model)           (the common form)
           method    model.compile()                        (in place, nn.Module.compile)
           function  step = torch.compile(train_step)       (a compiled function around the model)
Writes {"unique_graphs", "calls_captured", "graph_breaks", "recompiles", "losses", "torch"} to OUT.
The same seed and data make the losses bit-for-bit comparable between the two runs."""
import json
import sys

import torch
from torch._dynamo.utils import counters

backend, form, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                        torch.nn.Linear(64, 64), torch.nn.GELU())
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x):
        return self.head(self.body(x))


model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = [(torch.randn(16, 32), torch.randint(0, 4, (16,))) for _ in range(8)]
loss_fn = torch.nn.functional.cross_entropy

if form == "module":
    run = torch.compile(model, backend=backend)
elif form == "method":
    model.compile(backend=backend)
    run = model
elif form == "function":
    run = None
else:
    sys.exit("unknown form %r" % form)


def forward_loss(x, y):
    return loss_fn(model(x), y)


compiled_loss = torch.compile(forward_loss, backend=backend) if form == "function" else None
losses = []
for i in range(steps):
    x, y = data[i % len(data)]
    opt.zero_grad(set_to_none=True)
    loss = compiled_loss(x, y) if compiled_loss is not None else loss_fn(run(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())

stats = counters["stats"]
result = {
    "torch": torch.__version__,
    "unique_graphs": stats.get("unique_graphs", 0),
    "calls_captured": stats.get("calls_captured", 0),
    "graph_breaks": sum(counters["graph_break"].values()),
    "recompiles": sum(v for k, v in counters["recompiles"].items()) if "recompiles" in counters else 0,
    "losses": losses,
}
with open(out, "w") as f:
    json.dump(result, f)
