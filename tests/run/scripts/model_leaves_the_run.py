# Saves the whole model (not its state_dict) in the middle of training and loads it back, the way
# pytorch/examples' word_language_model keeps its best model: the file must be the user's model
# alone, with none of trainscope's hooks (PyTorch 2.6+'s weights_only torch.load refuses any
# global it was not told about, and a machine without trainscope could not load it at all).
# A deep copy (an EMA model) must not carry them either, torch.jit.script must not try to compile
# them (TorchScript compiles a module's hooks) nor stand in for the caller of a scripted class,
# and the live model keeps them.
# Prints "MODEL LEAVES OK" and exits 0; exits 1 naming the first failed check.
import copy
import io
import os
import pickle
import sys
import tempfile

import torch


def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


# A TorchScript class, scripted when defined (after the agent wrapped torch.jit.script): its names
# resolve in this module's frame, so the wrapper must not stand in as the caller.
@torch.jit.script
class Pair(object):
    def __init__(self, a: torch.Tensor, b: torch.Tensor):
        self.a = a
        self.b = b

    def total(self) -> torch.Tensor:
        return double(self.a + self.b)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


def fail(what):
    print("FAILED: " + what, flush=True)
    sys.exit(1)


def hooks(m):
    return len(m._forward_pre_hooks) + len(m._forward_hooks)


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
under_agent = "trainscope_agent" in sys.modules
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
path = os.path.join(tempfile.mkdtemp(prefix="ts-leaves-"), "model.pt")
for step in range(steps):
    loss = model(torch.randn(8, 64)).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == steps // 2:
        # Without this the checks below would pass on a model nobody hooked.
        if under_agent and hooks(model) == 0:
            fail("the agent put no hook on the model by step %d" % step)
        live = hooks(model)
        with open(path, "wb") as f:
            torch.save(model, f)
        raw = open(path, "rb").read()
        if b"trainscope" in raw:
            fail("torch.save(model) wrote trainscope's name into the file")
        if hasattr(torch.serialization, "safe_globals"):  # PyTorch 2.4+: the weights_only loader
            allowed = [Net, torch.nn.Sequential, torch.nn.Linear, torch.nn.ReLU]
            with torch.serialization.safe_globals(allowed):
                back = torch.load(path, weights_only=True)
        else:
            back = torch.load(path)
        if not isinstance(back, Net) or hooks(back) != 0:
            fail("the loaded model is %r with %d hooks" % (type(back), hooks(back)))
        if not torch.equal(back.body[0].weight, model.body[0].weight):
            fail("the loaded weights differ")
        if b"trainscope" in pickle.dumps(model):
            fail("pickle.dumps(model) names trainscope")
        ema = copy.deepcopy(model)
        if hooks(ema) != 0:
            fail("copy.deepcopy(model) carries %d hooks" % hooks(ema))
        if hooks(model) != live:
            fail("the live model lost its hooks: %d, was %d" % (hooks(model), live))
        if Pair(torch.ones(1), torch.ones(1)).total().item() != 4.0:
            fail("the TorchScript class computes something else")
        scripted = torch.jit.script(model)  # deployment export at the end of many scripts
        x = torch.randn(2, 64)
        if not torch.allclose(scripted(x), model(x)):
            fail("the scripted model computes something else")
        if hooks(model) != live:
            fail("scripting left the live model with %d hooks, was %d" % (hooks(model), live))
        buf = io.BytesIO()
        torch.save({"model": model, "step": step}, buf)  # nested in a checkpoint dict
        if b"trainscope" in buf.getvalue():
            fail("a checkpoint dict holding the model names trainscope")
os.remove(path)
os.rmdir(os.path.dirname(path))
print("MODEL LEAVES OK (agent %s, torch %s)" % ("on" if under_agent else "off", torch.__version__), flush=True)
