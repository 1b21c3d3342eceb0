"""The model's FLOPs per training step, counted once after warm-up (for MFU / achieved FLOP/s).

For exactly one step (the one after step 2, so step 3 normally, of the loop's final step marker:
never a provisional forward step while an optimizer waits for its first step) global module forward hooks
(torch >= 1.8, the same ones hooks_model uses in step 1) count, from the shapes alone (no data
read, no GPU sync), the multiply-accumulates of every forward of:
  nn.Linear                  input elements x out_features
  nn.Conv1d/2d/3d            output elements x in_channels/groups x kernel volume
  nn.MultiheadAttention      q/k/v and output projections + QK^T + attention x V
  nn.LSTM/GRU/RNN            per token, layer and direction: gates x hidden x (layer input + hidden)
                             (gates 4, 3, 1), plus the projection with proj_size
  nn.LSTMCell/GRUCell/RNNCell  per sample: gates x hidden x (input + hidden)
and, outside those modules, torch.matmul / torch.bmm / Tensor.__matmul__ (custom attention),
torch.addmm / torch.baddbmm (GPT-2's Conv1D), F.linear called directly and
F.scaled_dot_product_attention (2.x). FLOPs = 2 x MACs (bias, activations and norms are not
counted: the usual MFU convention, e.g. PaLM's appendix B). A forward run with autograd recording
counts 3x (its backward costs about twice the forward: input and weight gradients), a no-grad
forward 1x. Everything is removed right after that step and one `flops` record is sent.
torch.utils.flop_counter.FlopCounterMode (2.x) is not used: a dispatch mode sees every op and
costs far more than a hook on the few modules that matter. Skipped for torch.compile'd models
(hooks would force a recompile).
"""
from .guard import G, fail, patch, remove_hooks, unpatch
from .state import S

_KINDS = None  # (Linear, conv classes, MultiheadAttention), resolved at install
_T = None      # the torch module


class _Count:
    __slots__ = ("phase", "at_step", "tries", "handles", "patched", "depth", "grad_macs", "nograd_macs",
                 "calls", "by_kind")

    def __init__(self):
        self.phase = 0      # 0 waiting, 1 counting, 2 done
        self.at_step = 0    # the step boundary after which counting started
        self.tries = 0
        self.handles = []
        self.patched = []   # (owner, name, original)
        self.reset()

    def reset(self):
        self.depth = 0      # inside a counted module: its own matmuls are already counted
        self.grad_macs = 0
        self.nograd_macs = 0
        self.calls = 0
        self.by_kind = {}


C = _Count()


def _resolve(torch):
    global _KINDS, _T
    nn = torch.nn
    _T = torch
    _KINDS = (nn.Linear, (nn.Conv1d, nn.Conv2d, nn.Conv3d), nn.MultiheadAttention, (nn.RNNBase, nn.RNNCellBase))


def install(torch):
    _resolve(torch)
    S.add_step_hook(on_step)


def on_step(step):
    """Called at every step boundary (state.end_step) until the count is done."""
    if C.phase == 2 or G.off:
        S.remove_step_hook(on_step)  # done (or off): nothing left to do at step ends
        return
    try:
        if C.phase == 0:
            # Only steps that are the loop's for good: while an optimizer waits for its first
            # step, a forward counts a provisional step, and an RL loop's twelve policy forwards
            # per optimizer step would be measured as one (pytorch/examples reinforce.py).
            if step >= 2 and S.final():
                _start(step)
        elif step == C.at_step + 1 and C.calls > 0:
            _report(step)
            _stop()
        else:
            # Steps renumbered (the first optimizer step after DataLoader-only steps) or no
            # forward in that step: count the next one instead, a few times at most.
            C.tries += 1
            C.reset()
            C.at_step = step
            if C.tries > 3:
                _stop()
    except Exception as e:
        _stop()
        fail("flops", e)


def _start(step):
    if G.compile_seen:
        C.phase = 2
        return
    torch = _T
    mm = torch.nn.modules.module
    if not (hasattr(mm, "register_module_forward_pre_hook") and hasattr(mm, "register_module_forward_hook")):
        C.phase = 2
        return
    _hook_and_patch(torch)
    C.phase = 1
    C.at_step = step


def _stop():
    remove_hooks(C.handles)
    unpatch(C.patched)
    C.phase = 2


def _report(step):
    grad, nograd = 2 * C.grad_macs, 2 * C.nograd_macs
    S.channel.send_text("flops", [
        ("flops_per_step", 3 * grad + nograd),
        ("forward_flops", grad + nograd),
        ("grad_forward_flops", grad),
        ("step", step),
        ("calls", C.calls),
        ("by_kind", ",".join("%s:%d" % (k, 2 * v) for k, v in sorted(C.by_kind.items()))),
        ("method", "module hooks"),
    ])


def _add(kind, macs):
    macs = int(macs)
    if _T.is_grad_enabled():
        C.grad_macs += macs
    else:
        C.nograd_macs += macs
    C.calls += 1
    C.by_kind[kind] = C.by_kind.get(kind, 0) + macs


# ---------------------------------------------------------------- modules

def _counted_types():
    return (_KINDS[0],) + _KINDS[1] + (_KINDS[2],) + _KINDS[3]


def _pre(module, inputs):
    if isinstance(module, _counted_types()):
        C.depth += 1
    return None


def _post(module, inputs, output):
    if not isinstance(module, _counted_types()):
        return None
    C.depth = max(0, C.depth - 1)
    if G.off or C.phase != 1:
        return None
    try:
        if isinstance(module, _KINDS[0]):
            x = inputs[0]
            _add("linear", x.numel() * module.out_features)
        elif isinstance(module, _KINDS[1]):
            out = output[0] if isinstance(output, (tuple, list)) else output
            k = 1
            for d in module.kernel_size:
                k *= d
            _add("conv", out.numel() * (module.in_channels // module.groups) * k)
        elif isinstance(module, _KINDS[2]):
            _add("attention", _mha_macs(module, inputs))
        else:
            _add("rnn", _rnn_macs(module, inputs))
    except Exception:
        pass  # an odd input (packed sequences, kwargs only): that module is not counted
    return None


def _mha_macs(m, inputs):
    q = inputs[0]
    k = inputs[1] if len(inputs) > 1 and inputs[1] is not None else q
    v = inputs[2] if len(inputs) > 2 and inputs[2] is not None else k
    e = m.embed_dim
    if q.dim() == 2:  # unbatched (L, E)
        n, lq, ls = 1, q.shape[0], k.shape[0]
    elif getattr(m, "batch_first", False):
        n, lq, ls = q.shape[0], q.shape[1], k.shape[1]
    else:
        n, lq, ls = q.shape[1], q.shape[0], k.shape[0]
    kdim, vdim = k.shape[-1], v.shape[-1]
    proj = n * (lq * e * e + ls * kdim * e + ls * vdim * e + lq * e * e)
    attn = 2 * n * lq * ls * e  # QK^T and attention x V, over all heads
    return proj + attn


_GATES = {"LSTM": 4, "GRU": 3}  # RNNBase.mode; RNN_TANH / RNN_RELU: 1


def _rnn_macs(m, inputs):
    """The input-to-hidden and hidden-to-hidden matmuls of every gate, for every token (the
    recurrence's elementwise gate math is not counted, like activations elsewhere)."""
    x = inputs[0]
    h = m.hidden_size
    if isinstance(m, _KINDS[3][1]):  # a cell: one time step, (N, I) or unbatched (I)
        name = type(m).__name__
        gates = 4 if "LSTM" in name else 3 if "GRU" in name else 1
        n = x.shape[0] if x.dim() == 2 else 1
        return n * gates * h * (m.input_size + h)
    gates = _GATES.get(m.mode, 1)
    if getattr(x, "batch_sizes", None) is not None:  # PackedSequence: its data holds every token
        tokens = x.data.shape[0]
    elif x.dim() == 2:  # unbatched (L, I)
        tokens = x.shape[0]
    else:
        tokens = x.shape[0] * x.shape[1]
    proj = getattr(m, "proj_size", 0) or 0
    out = proj or h
    dirs = 2 if m.bidirectional else 1
    macs, width = 0, m.input_size
    for _ in range(m.num_layers):
        macs += dirs * tokens * (gates * h * (width + out) + h * proj)
        width = out * dirs
    return macs


# ---------------------------------------------------------------- functional matmuls

def _patch(owner, name, macs_fn):
    original = getattr(owner, name, None)
    if original is None:
        return

    def counted(*args, **kwargs):
        if C.phase == 1 and C.depth == 0 and not G.off:
            try:
                _add(name.strip("_"), macs_fn(*args, **kwargs))
            except Exception:
                pass
        return original(*args, **kwargs)
    counted.__wrapped__ = original
    for attr in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(counted, attr, getattr(original, attr))
        except Exception:
            pass
    patch(owner, name, counted, into=C.patched)


def _matmul_macs(a, b, *args, **kwargs):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) == 1:
        sa = (1,) + sa
    if len(sb) == 1:
        sb = sb + (1,)
    batch = 1
    lead = _T.broadcast_shapes(sa[:-2], sb[:-2]) if (len(sa) > 2 or len(sb) > 2) else ()
    for d in lead:
        batch *= d
    return batch * sa[-2] * sa[-1] * sb[-1]


def _addmm_macs(inp, m1, m2, *args, **kwargs):
    return _matmul_macs(m1, m2)


def _linear_macs(x, weight, *args, **kwargs):
    return x.numel() // max(1, x.shape[-1]) * weight.shape[0] * weight.shape[-1]


def _sdpa_macs(q, k, v, *args, **kwargs):
    # (..., L, E) x (..., S, E) -> (..., L, S), then x (..., S, Ev)
    lead = 1
    for d in q.shape[:-2]:
        lead *= d
    lq, e, ls, ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    return lead * lq * ls * (e + ev)


def estimate(torch, model, *inputs):
    """FLOPs of one forward of `model(*inputs)` under the current grad mode, counted the same
    way (for tests and the lab); returns (flops_per_step, forward_flops)."""
    _resolve(torch)
    saved = (C.phase, C.at_step)
    C.reset()
    _hook_and_patch(torch)
    try:
        model(*inputs)
    finally:
        _stop()
        C.phase, C.at_step = saved
    grad, nograd = 2 * C.grad_macs, 2 * C.nograd_macs
    return 3 * grad + nograd, grad + nograd


def _hook_and_patch(torch):
    mm = torch.nn.modules.module
    C.handles = [mm.register_module_forward_pre_hook(_pre), mm.register_module_forward_hook(_post)]
    for owner, name in ((torch, "matmul"), (torch, "bmm"), (torch.Tensor, "__matmul__"), (torch.Tensor, "matmul"),
                        (torch.Tensor, "bmm")):
        _patch(owner, name, _matmul_macs)
    _patch(torch, "addmm", _addmm_macs)    # GPT-2's Conv1D (transformers) is an addmm
    _patch(torch, "baddbmm", _addmm_macs)
    F = torch.nn.functional
    _patch(F, "linear", _linear_macs)      # F.linear called directly (nn.Linear's own is inside it)
    if hasattr(F, "scaled_dot_product_attention"):
        _patch(F, "scaled_dot_product_attention", _sdpa_macs)
    C.phase = 1
