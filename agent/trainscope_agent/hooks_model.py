"""Forward, backward and optimizer-step hooks, and the settings seen through them.

- Forward: global module hooks (all versions since 1.8) find the outermost module during the
  first step only (they disable the fast path for every module call), then are removed; from then
  on plain hooks on that one module time forward and read the autocast state.
- Backward: `torch.autograd.backward` (which `Tensor.backward` calls); the loss value is read
  only when it is a CPU scalar (never a GPU sync).
- Optimizer: global step hooks where the installed PyTorch has them (2.x), else each optimizer
  class's `step` is wrapped once, at the first construction of that class (1.13).
"""
import inspect
import math
import sys
import threading

from . import flops, hooks_copy
from .guard import G, check_break, fail, patch
from .state import S, now

_main_thread = threading.main_thread()
_SEQ = (tuple, list)
_isfinite = math.isfinite


class _Model:
    global_handles = []
    depth = 0
    candidates = {}     # id -> module, top-level modules called during step 1
    chosen = None
    reported = False
    autocast_dtype = ""
    compile_called = False


M = _Model()


def install(torch):
    _install_forward_finder(torch)
    _install_backward(torch)
    _install_optimizer(torch)
    if hasattr(torch, "compile"):
        compile_orig = patch(torch, "compile", None)

        def compile(*args, **kwargs):
            M.compile_called = True
            return compile_orig(*args, **kwargs)
        compile.__wrapped__ = compile_orig
        compile.__doc__ = getattr(compile_orig, "__doc__", None)
        torch.compile = compile
    S.add_step_hook(_after_first_step)
    flops.install(torch)  # the model's FLOPs, counted once in step 3 (flops.py)


# ---------------------------------------------------------------- forward

def _install_forward_finder(torch):
    mm = torch.nn.modules.module
    if not (hasattr(mm, "register_module_forward_pre_hook") and
            hasattr(mm, "register_module_forward_hook")):
        return

    def pre(module, inputs):
        if G.off:
            return None
        try:
            if M.depth == 0:
                M.candidates.setdefault(id(module), module)
                S.touch()
            M.depth += 1
        except Exception as e:
            fail("forward finder", e)
        return None

    def post(module, inputs, output):
        if M.depth > 0:
            M.depth -= 1
        return None

    M.global_handles = [mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post)]


def _count_params(m):
    try:
        return sum(p.numel() for p in m.parameters())
    except Exception:
        return 0


def _after_first_step(step):
    """After step 1: pick the model, drop the global hooks, hook only the model."""
    if M.chosen is not None or not M.global_handles:
        if M.chosen is None:
            S.remove_step_hook(_after_first_step)  # no module hooks here: nothing to find
        elif not M.reported and step >= 2:
            _report_model()
            S.remove_step_hook(_after_first_step)
        return
    for h in M.global_handles:
        h.remove()
    M.global_handles = []
    best, best_n = None, 0
    for m in M.candidates.values():
        n = _count_params(m)
        if n > best_n:
            best, best_n = m, n
    M.candidates = {}
    if best is None:
        return
    M.chosen = best
    best.register_forward_pre_hook(_fwd_pre)
    best.register_forward_hook(_fwd_post)


def _fwd_pre(module, inputs):
    if G.off:
        return None
    try:
        if G.break_hook:
            check_break("forward")
        S.fwd_t0 = now()
        if S.first_fwd_in_step:
            S.first_fwd_in_step = False
            if S.gpu is not None and S.cuda_ready:
                S.gpu.forward_start()
        if not M.reported and not M.autocast_dtype:  # read until the model record is sent
            M.autocast_dtype = _autocast_dtype(S.torch)
    except Exception as e:
        fail("forward", e)
    return None


def _fwd_post(module, inputs, output):
    if G.off:
        return None
    if S.fwd_t0:
        S.fwd_ns += now() - S.fwd_t0
        S.fwd_t0 = 0
    return None


def _autocast_dtype(torch):
    # CUDA autocast first (the usual case), then CPU autocast; each only where the build has it.
    try:
        if torch.is_autocast_enabled():
            if hasattr(torch, "get_autocast_gpu_dtype"):
                return str(torch.get_autocast_gpu_dtype())
            return str(torch.get_autocast_dtype("cuda"))
    except Exception:
        pass
    try:
        if hasattr(torch, "is_autocast_cpu_enabled") and torch.is_autocast_cpu_enabled():
            return str(torch.get_autocast_cpu_dtype())
    except Exception:
        pass
    return ""


def _report_model():
    M.reported = True
    torch = S.torch
    m = M.chosen
    inner = getattr(m, "_orig_mod", m)
    dp = isinstance(inner, torch.nn.DataParallel)
    ddp = False
    try:
        ddp = isinstance(inner, torch.nn.parallel.DistributedDataParallel)
    except Exception:
        pass
    compiled = hasattr(m, "_orig_mod") or M.compile_called
    dev, dtype, dtypes, n = "", "", set(), 0
    for p in m.parameters():
        if not dev:
            dev, dtype = str(p.device), str(p.dtype)
        dtypes.add(str(p.dtype))
        n += p.numel()
    S.channel.send_text("model", [
        ("class", type(inner).__name__),
        ("module", type(m).__name__),
        ("params", n),
        ("param_device", dev),
        ("param_dtype", dtype),
        ("param_dtypes", ",".join(sorted(dtypes))),
        ("autocast_dtype", M.autocast_dtype),
        ("compiled", compiled),
        ("data_parallel", dp),
        ("ddp", ddp),
    ])


# ---------------------------------------------------------------- backward

def _install_backward(torch):
    ag = torch.autograd
    backward_orig = patch(ag, "backward", None)

    def backward(tensors, *args, **kwargs):
        if G.off:
            return backward_orig(tensors, *args, **kwargs)
        t0 = now()
        try:
            if G.break_hook:
                check_break("backward")
            if not S.t_start:
                S.t_start = t0
            t = tensors
            if isinstance(t, _SEQ) and len(t) == 1:
                t = t[0]
            # A CPU scalar loss is free to read; a GPU one would be a sync: skip it.
            if getattr(t, "is_cuda", True) is False and t.dim() == 0 and t.is_floating_point():
                v = float((hooks_copy.item_orig or type(t).item)(t))
                S.loss = v
                S.loss_seen = True
                if not _isfinite(v):
                    S.nonfinite = True
        except Exception as e:
            fail("backward", e)
        try:
            return backward_orig(tensors, *args, **kwargs)
        finally:
            if not G.off:
                S.bwd_ns += now() - t0

    backward.__wrapped__ = backward_orig
    backward.__doc__ = backward_orig.__doc__
    ag.backward = backward


def _item(t):
    # The original Tensor.item (not our counting wrapper): reading the loss is not the user's sync.
    return (hooks_copy.item_orig or type(t).item)(t)


# ---------------------------------------------------------------- optimizer

_opt_t0 = {}
_opt_reported = set()


def _before_step(opt):
    if S.primary_opt is None:
        S.primary_opt = opt
    S.touch()
    if id(opt) not in _opt_reported:
        _opt_reported.add(id(opt))
        _report_optimizer(opt)


def _install_optimizer(torch):
    import importlib
    om = importlib.import_module("torch.optim.optimizer")  # 1.13 deletes the name from torch.optim
    if hasattr(om, "register_optimizer_step_pre_hook") and hasattr(om, "register_optimizer_step_post_hook"):
        def pre(opt, args, kwargs):
            if G.off:
                return None
            try:
                _before_step(opt)
                S.in_opt += 1
                _opt_t0[id(opt)] = now()
            except Exception as e:
                fail("optimizer step", e)
            return None

        def post(opt, args, kwargs):
            if G.off:
                return None
            try:
                t0 = _opt_t0.pop(id(opt), 0)
                if t0:
                    S.in_opt -= 1
                check_break("optimizer")
                if t0:
                    S.opt_ns += now() - t0
                if opt is S.primary_opt:
                    S.end_step(True)
            except Exception as e:
                fail("optimizer step", e)
            return None

        h1 = om.register_optimizer_step_pre_hook(pre)
        h2 = om.register_optimizer_step_post_hook(post)
        G.patches.append((_Handle(h1), "remove", None))
        G.patches.append((_Handle(h2), "remove", None))
        return

    # 1.13: wrap `step` of each optimizer class the first time one is built.
    Optimizer = torch.optim.Optimizer
    init_orig = patch(Optimizer, "__init__", None)

    def __init__(self, *args, **kwargs):
        init_orig(self, *args, **kwargs)
        if G.off:
            return
        try:
            _wrap_class_step(type(self))
        except Exception as e:
            fail("optimizer wrap", e)

    Optimizer.__init__ = __init__


class _Handle:
    """Lets guard.fail() remove a hook handle like it restores a patched attribute."""

    def __init__(self, h):
        self.h = h

    def __setattr__(self, name, value):
        if name == "remove":
            self.h.remove()
        else:
            object.__setattr__(self, name, value)


def _wrap_class_step(cls):
    if cls.__dict__.get("_trainscope_step"):
        return
    step_orig = patch(cls, "step", None)

    def step(self, *args, **kwargs):
        if G.off:
            return step_orig(self, *args, **kwargs)
        if self is not S.primary_opt or not S.t_start:
            try:
                _before_step(self)
            except Exception as e:
                fail("optimizer step", e)
        t0 = now()
        S.in_opt += 1
        try:
            return step_orig(self, *args, **kwargs)
        finally:
            S.in_opt -= 1
            if not G.off:
                try:
                    if G.break_hook:
                        check_break("optimizer")
                    S.opt_ns += now() - t0
                    if self is S.primary_opt:
                        S.end_step(True)
                except Exception as e:
                    fail("optimizer step", e)

    for attr in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(step, attr, getattr(step_orig, attr))
        except Exception:
            pass
    step.__wrapped__ = step_orig
    step.hooked = getattr(step_orig, "hooked", False)
    cls.step = step
    cls._trainscope_step = True


def _report_optimizer(opt):
    cls = type(opt)
    d = getattr(opt, "defaults", {}) or {}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    has_fused = "fused" in params
    has_foreach = "foreach" in params
    fused, foreach = d.get("fused"), d.get("foreach")
    on_cuda = False
    try:
        p = opt.param_groups[0]["params"][0]
        on_cuda = bool(p.is_cuda)
    except Exception:
        pass
    if fused:
        impl = "fused"
    elif foreach:
        impl = "foreach"
    elif foreach is None and has_foreach and on_cuda and hasattr(sys.modules.get("torch.optim.optimizer"),
                                                                          "_default_to_fused_or_foreach"):
        impl = "foreach"  # 2.x picks foreach by default for CUDA params
    elif has_foreach or has_fused:
        impl = "single_tensor"
    else:
        impl = "unknown"
    S.channel.send_text("optimizer", [
        ("class", cls.__name__),
        ("impl", impl),
        ("fused", fused),
        ("foreach", foreach),
        ("has_fused", has_fused),
        ("has_foreach", has_foreach),
        ("param_groups", len(opt.param_groups)),
        ("params_on_cuda", on_cuda),
    ])
