"""Autograd anomaly detection left on (`torch.autograd.set_detect_anomaly(True)`, `detect_anomaly()`,
Lightning's `Trainer(detect_anomaly=True)`): every autograd node the forward creates stores the
formatted Python stack (PyTorch calls `torch.fx.traceback.format_stack`, `traceback.format_stack`
before 2.0), and with check_nan every gradient the backward computes is tested for NaN (on a GPU a
synchronisation per node). PyTorch's docs: "This mode should be enabled only for debugging as the
different tests will slow down your program execution."

Recorded, for rules/anomaly_detection (docs/AGENT.md, "Anomaly detection"):
- where the script turned it on: the user's line of the first `torch.set_anomaly_enabled(True, ...)`,
  which both context managers and Lightning call (site role "anomaly");
- once, over three training steps from step 4 with it on: the stack captures PyTorch made and
  their time (its format_stack timed for those steps only; the quickest step counts, as load only
  adds time): one per node created, a parameter's AccumulateGrad included when the loop lets it be
  freed between steps. The first of those steps' backward graphs: their nodes and (check_nan) the
  elements of the gradients they computed, read by a hook on each node for that step. What a NaN
  test costs, fixed and per element (timed on a 4-element and a 1 Mi-element tensor). Sent as the
  `anomaly` text record.
`--set autograd.detect_anomaly=false` (overrides.py) makes every call turn it off instead."""
import sys

from . import sites
from .guard import G, fail, patch, remove_hooks
from .state import S, now

_MEASURE_AT = 4    # the first step measured (start-up and warm-up are behind)
_STEPS = 3         # steps whose captures are timed: the quickest counts (load only ever adds time)


class A:
    orig = None        # torch.set_anomaly_enabled as PyTorch defines it
    site = None        # the user's line that turned it on (sites.Site), False: none on the stack
    force_off = False  # --set autograd.detect_anomaly=false
    on_in_step = False # a call turned it on since the last step boundary (a detect_anomaly() block)
    armed = False      # the step being measured
    done = False
    restore = None     # (module, original) of the timed format_stack function
    handles = []       # our hooks on the measured step's nodes (removed after it: a retained graph keeps them)
    captures = 0       # the step's stack captures and their time
    capture_ns = 0
    timed = []         # (captures, ns) of each measured step
    nodes = 0          # the step's backward graphs' nodes (AccumulateGrad left out: no output to test)
    grad_tests = 0     # the gradients they computed (each tested for NaN) ...
    grad_elems = 0     # ... and their elements
    nan_test_ns = -1.0     # a NaN test's fixed part
    nan_elem_ps = -1.0     # ... and its part per element (picoseconds)


def install(torch):
    if not hasattr(torch, "set_anomaly_enabled"):
        return
    A.orig = orig = patch(torch, "set_anomaly_enabled", None)

    def set_anomaly_enabled(enabled, *args, **kwargs):
        if enabled and not G.off:
            try:
                A.on_in_step = True
                if A.site is None:
                    A.site = sites.add(sites.where("anomaly", 2)) or False
                    S.add_step_hook(_after_step)  # only now: a run that never turns it on pays nothing
                if A.force_off:
                    from . import overrides
                    overrides.decide("autograd.detect_anomaly", True,
                                     "anomaly detection left off: the script's call to turn it on was ignored")
                    enabled = False
            except Exception as e:
                fail("anomaly mode", e)
        return orig(enabled, *args, **kwargs)

    set_anomaly_enabled.__wrapped__ = orig
    set_anomaly_enabled.__doc__ = getattr(orig, "__doc__", None)
    torch.set_anomaly_enabled = set_anomaly_enabled


def _after_step(step):
    """Arms the measurement at the end of step _MEASURE_AT - 1 (if anomaly detection is on), sends
    the record one step later, then leaves the step path (on it from the first call that turned
    anomaly detection on)."""
    try:
        if A.armed:
            A.timed.append((A.captures, A.capture_ns))
            A.captures = A.capture_ns = 0
            remove_hooks(A.handles)  # the first step's gradients are counted
            if len(A.timed) < _STEPS:
                return
            _disarm()
            A.done = True
            S.remove_step_hook(_after_step)
            _send()
        elif step >= _MEASURE_AT - 1 and not A.done:
            # On now, or turned on inside the step (`with detect_anomaly():` around forward and
            # backward, the optimizer step after the block): the next step is measured.
            torch = S.torch
            on = A.on_in_step or (torch is not None and torch.is_anomaly_enabled())
            if on and not S.graph_capture and not G.compiling():
                _arm()
        A.on_in_step = False
    except Exception as e:
        _disarm()
        S.remove_step_hook(_after_step)
        fail("anomaly mode", e)


def _arm():
    """PyTorch's stack formatter, timed for the measured steps (the C++ side looks it up at each
    call): torch.fx.traceback's (1.13 and 2.x), the standard library's where PyTorch has none."""
    try:
        import torch.fx.traceback  # noqa: F401  (PyTorch's C++ imports it at its first capture)
    except Exception:
        pass
    mod = sys.modules.get("torch.fx.traceback")
    if getattr(mod, "format_stack", None) is None:
        mod = sys.modules.get("traceback")
    fn = mod.format_stack

    def timed(*args, **kwargs):
        t0 = now()
        try:
            return fn(*args, **kwargs)
        finally:
            A.captures += 1
            A.capture_ns += now() - t0
    mod.format_stack = timed
    A.restore = (mod, fn)
    A.armed = True


def _disarm():
    A.armed = False
    if A.restore:
        mod, fn = A.restore
        mod.format_stack = fn
        A.restore = None
    remove_hooks(A.handles)


def on_backward(tensors):
    """Our backward wrapper, while armed: the graph's nodes and gradients (and, at the first call,
    the NaN test's cost)."""
    try:
        if A.timed:
            return  # the graphs are counted in the first measured step only
        torch = S.torch
        roots = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
        nodes = _graph([getattr(t, "grad_fn", None) for t in roots])
        A.nodes += len(nodes)
        if _check_nan(torch):
            for fn in nodes:  # this graph's nodes, for this step (removed at its end)
                A.handles.append(fn.register_hook(_grads_of))
            if A.nan_test_ns < 0:
                _measure(torch)
    except Exception as e:
        _disarm()
        fail("anomaly mode", e)


def _check_nan(torch):
    return torch.is_anomaly_check_nan_enabled() if hasattr(torch, "is_anomaly_check_nan_enabled") else True


def _graph(fns):
    """The nodes of the graph behind fns, AccumulateGrad left out (it computes no gradient)."""
    # seen keeps every node object alive: a freed wrapper's id can come back for another node.
    seen, stack, out = {}, [f for f in fns if f is not None], []
    while stack and len(seen) < 1_000_000:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen[id(f)] = f
        if type(f).__name__ != "AccumulateGrad":
            out.append(f)
        for nxt, _ in getattr(f, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return out


def _grads_of(grad_inputs, grad_outputs):
    """A node's hook for this one backward: the gradients it computed, which check_nan tests."""
    for g in grad_inputs:
        if g is not None:
            A.grad_tests += 1
            A.grad_elems += g.numel()


def _measure(torch):
    """A NaN test as the engine runs it on each gradient (isnan, any, read back), timed on a small
    tensor (its fixed part: dispatch and the read; from Python, so a little over the engine's own)
    and on a 1 Mi-element one (its part per element)."""
    with torch.no_grad():
        big, small = torch.zeros(1 << 20), torch.zeros(4)
        test = (lambda t: t._is_any_true()) if hasattr(big, "_is_any_true") else (lambda t: t.any())
        t_small = min(_timed(lambda: bool(test(torch.isnan(small)))) for _ in range(5))
        t_big = min(_timed(lambda: bool(test(torch.isnan(big)))) for _ in range(3))
    A.nan_test_ns = float(t_small)
    A.nan_elem_ps = 1e3 * max(0.0, t_big - t_small) / ((1 << 20) - 4)


def _timed(fn):
    t0 = now()
    fn()
    return now() - t0


def _send():
    torch = S.torch
    captures, ns = min(A.timed, key=lambda t: t[1])
    S.channel.send_text("anomaly", [
        ("enabled", 1), ("check_nan", 1 if _check_nan(torch) else 0), ("captures_per_step", captures),
        ("capture_ns_per_step", ns), ("nodes_per_step", A.nodes), ("grad_tests_per_step", A.grad_tests),
        ("grad_elems_per_step", A.grad_elems), ("nan_test_ns", round(A.nan_test_ns)), ("nan_elem_ps", round(A.nan_elem_ps)),
        ("step", S.step)])
