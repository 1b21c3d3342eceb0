"""Prints, as one JSON line, the agent's FLOPs estimates (agent/trainscope_agent/flops.py) for
small models with known shapes; tests/run/host_run_test.cpp recomputes each from the shapes."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "agent"))
import torch  # noqa: E402
from trainscope_agent import flops  # noqa: E402

nn = torch.nn
torch.manual_seed(0)
out = {}


def case(name, model, *inputs, grad=True):
    with torch.set_grad_enabled(grad):
        per_step, forward = flops.estimate(torch, model, *inputs)
    out[name] = {"per_step": per_step, "forward": forward}


mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
case("mlp", mlp, torch.randn(16, 32))
case("mlp_nograd", mlp, torch.randn(16, 32), grad=False)
case("mlp_3d_input", mlp, torch.randn(4, 6, 32))
case("conv2d", nn.Conv2d(3, 8, 3, padding=1), torch.randn(2, 3, 10, 10))
case("conv1d_groups", nn.Conv1d(8, 16, 5, groups=2), torch.randn(4, 8, 20))
mha = nn.MultiheadAttention(16, 4, batch_first=True)
q = torch.randn(2, 5, 16)
case("mha_self", mha, q, q, q)


class Att(nn.Module):
    def forward(self, q, k):
        return torch.softmax(q @ k.transpose(-1, -2), -1) @ k


case("matmul_attention", Att(), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8))


class Gpt2Conv1D(nn.Module):  # transformers' Conv1D: an addmm with a (nx, nf) weight
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        shape = x.size()[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(shape)


class FunctionalLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(24, 12))

    def forward(self, x):
        return nn.functional.linear(x, self.w)


case("gpt2_conv1d", Gpt2Conv1D(48, 16), torch.randn(2, 7, 16))
case("functional_linear", FunctionalLinear(), torch.randn(5, 12))
# nn.Linear calls F.linear inside: counted once, not twice.
case("linear_once", nn.Linear(12, 24), torch.randn(5, 12))
# Recurrent layers: nn.LSTM/GRU over sequences (batch_first, two layers, bidirectional, proj_size,
# packed), and the cells one step at a time (pytorch/examples' time_sequence_prediction).
case("lstm_2layer", nn.LSTM(10, 20, num_layers=2), torch.randn(7, 3, 10))
case("gru_bidir_batch_first", nn.GRU(6, 8, bidirectional=True, batch_first=True), torch.randn(4, 5, 6))
case("lstm_proj", nn.LSTM(10, 20, proj_size=5), torch.randn(7, 3, 10))
packed = nn.utils.rnn.pack_padded_sequence(torch.randn(6, 3, 10), [6, 4, 2])
case("lstm_packed", nn.LSTM(10, 20), packed)
case("lstm_cell", nn.LSTMCell(10, 20), torch.randn(3, 10))
case("rnn_cell_unbatched", nn.RNNCell(10, 20), torch.randn(10))
# Everything put back: no counting wrapper left on torch or Tensor.
out["restored"] = ("matmul" not in torch.Tensor.__dict__ and "bmm" not in torch.Tensor.__dict__ and
                   torch.matmul.__class__.__name__ == "builtin_function_or_method" and
                   torch.addmm.__class__.__name__ == "builtin_function_or_method" and
                   not hasattr(nn.functional.linear, "__wrapped__") and
                   not hasattr(torch.Tensor.__matmul__, "__wrapped__"))
print(json.dumps(out))
