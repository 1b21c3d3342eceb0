"""The agent's safety net: its own failures are reported once, then it switches itself off.

Every wrapper checks `G.off` first and calls the original straight through when set; `fail()`
also puts the original functions back, so a broken agent costs nothing afterwards.
User exceptions are never caught here: wrappers re-raise whatever the original raised.
"""
import os
import sys


def _never():
    return False


class _Guard:
    __slots__ = ("off", "errors", "patches", "channel", "break_hook", "break_at", "compiling",
                 "compile_seen")

    def __init__(self):
        self.off = False
        # Every wrapper asks `G.compiling()` first and, while Dynamo traces (torch.compile), calls
        # the original and nothing else: Dynamo folds is_compiling() to True at trace time, so the
        # wrapper adds no graph break and the traced graph holds the original call (whose identity
        # Dynamo's keyed rewrites, e.g. of torch.distributed collectives, depend on).
        self.compiling = _never
        # torch.compile was called (hooks_model): from then on nothing Dynamo guards on may
        # change (no module hooks added or removed: flops.py stays off).
        self.compile_seen = False
        self.errors = []
        self.patches = []   # (owner, name, original) for restoring
        self.channel = None
        # Test aid: TRAINSCOPE_AGENT_BREAK=<hook> makes that hook raise (tests/run checks
        # that the training still completes and the error is reported once).
        # "name" breaks at once, "name:N" from step N on.
        spec = os.environ.get("TRAINSCOPE_AGENT_BREAK", "")
        self.break_hook, _, at = spec.partition(":")
        self.break_at = int(at) if at.isdigit() else 0


G = _Guard()


def resolve_compiling(torch):
    """Points G.compiling at the installed PyTorch's "is Dynamo tracing?" test: torch.compiler's
    (2.3+), else torch._dynamo's once Dynamo is loaded (2.0-2.2: we never import it ourselves,
    so this is called again when the user calls torch.compile). Never raises."""
    try:
        fn = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if fn is None:
            dynamo = sys.modules.get("torch._dynamo")
            fn = getattr(dynamo, "is_compiling", None) if dynamo is not None else None
        if callable(fn):
            G.compiling = fn
    except Exception:
        pass


def check_break(name, step=0):
    if G.break_hook == name and step >= G.break_at:
        raise RuntimeError("deliberately broken hook '%s' (TRAINSCOPE_AGENT_BREAK)" % name)


_MISSING = object()


def patch(owner, name, wrapper, into=None):
    """Replaces owner.name by wrapper, noted in `into` (default: the agent's own list) for
    unpatch(); returns the callable the wrapper must call. A class attribute that was only
    inherited (Tensor.matmul comes from _TensorBase) is deleted again, not copied onto the class."""
    callable_original = getattr(owner, name)
    own = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else callable_original
    (G.patches if into is None else into).append((owner, name, own))
    setattr(owner, name, wrapper)
    return callable_original


def unpatch(patches):
    """Puts back what patch() replaced, newest first, and empties the list; never raises."""
    for owner, name, original in reversed(patches):
        try:
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        except Exception:
            pass
    del patches[:]


def remove_hooks(handles):
    """Removes our hooks (torch's RemovableHandle) and empties the list; never raises (a module may
    be gone)."""
    for h in handles:
        try:
            h.remove()
        except Exception:
            pass
    del handles[:]


def retire():
    """trainscope is gone (the channel died): nothing listens, so stop measuring and put the
    originals back, silently (not an error: the training simply runs unobserved)."""
    if G.off:
        return
    G.off = True
    _restore()


def fail(where, exc):
    """Reports the agent's own error once and switches the agent off."""
    if G.off:
        return
    G.off = True
    msg = "%s: %s: %s" % (where, type(exc).__name__, exc)
    G.errors.append(msg)
    try:
        sys.stderr.write("trainscope agent: internal error in %s; the agent switched itself off, "
                         "your training continues\n" % msg)
    except Exception:
        pass
    try:
        if G.channel is not None:
            G.channel.send_text("error", [("where", where), ("message", msg)])
    except Exception:
        pass
    _restore()


def _restore():
    unpatch(G.patches)
