"""Warnings raised inside a call the agent wraps name the line they would name without the agent.

A library warns with `stacklevel=N` to name a caller's line: PyTorch 2.13's
`DistributedDataParallel(..., broadcast_buffers=False)` warns with stacklevel=2 from its
`__init__`, `Optimizer.add_param_group` with stacklevel=3 (duplicate parameters). Each wrapper the
agent puts around such a function adds a frame, so the warning would name the agent's file, and a
filter the user keyed on their own module (`-W error::FutureWarning:__main__`) would no longer
match it. `call(fn, ...)` runs fn with its warnings recorded, then issues each one again at the
frame it would have named without the two frames in between (this one and the wrapper's), through
the user's own filters and once-per-line registry.

Recording swaps the warnings module's filters and display hook, as `warnings.catch_warnings` does
(so it is not thread-safe either: another thread's warning in the window is recorded and issued
again as it was), but without bumping the filters' version: catch_warnings would reset every
module's registry, and a warning shown once per line would show again. A warning the user's filters
turn into an error is raised when fn has returned, not inside it. Only for calls made once per
object (constructors, torch.compile), never per step. Where the interpreter's warnings module lacks
the names swapped here, fn is just called.
"""
import sys
import warnings

_INSERTED = 2  # frames between fn and the line it would name: call's own and the wrapper's
_ALWAYS = ("always", None, Warning, None, 0)
_elsewhere = {}  # once-registries, by file, for warnings that named a frame inside fn


def call(fn, *args, **kwargs):
    w = warnings
    impl = getattr(w, "_showwarnmsg_impl", None)
    orig = getattr(w, "_showwarning_orig", None)
    filters = getattr(w, "filters", None)
    if impl is None or orig is None or not isinstance(filters, list):
        return fn(*args, **kwargs)
    here = sys._getframe()
    log = []
    saved = (filters, w.showwarning, impl)
    w.filters, w.showwarning, w._showwarnmsg_impl = [_ALWAYS], orig, log.append
    try:
        return fn(*args, **kwargs)
    finally:
        w.filters, w.showwarning, w._showwarnmsg_impl = saved
        try:
            for m in log:
                _again(m, here)
        finally:
            # this frame in its own local is a cycle that would keep args (the object being
            # built) alive until the cyclic collector runs: an optimizer dropped by the script
            # would still look alive
            del here


def _again(m, here):
    """Issues recorded warning m again, _INSERTED frames further out than the live frame it named.
    A warning that named this module is from `call`'s own frame, whatever line it is on now."""
    f = here
    while f is not None:
        if m.filename == f.f_code.co_filename and (f is here or m.lineno == f.f_lineno):
            break
        f = f.f_back
    for _ in range(_INSERTED if f is not None else 0):
        f = f.f_back if f is not None else None
    if f is None:
        # named a frame inside fn (returned since), or one past the stack's end: as recorded
        warnings.warn_explicit(m.message, m.category, m.filename, m.lineno,
                               registry=_elsewhere.setdefault(m.filename, {}), source=m.source)
        return
    g = f.f_globals
    warnings.warn_explicit(m.message, m.category, f.f_code.co_filename, f.f_lineno,
                           module=g.get("__name__"), registry=g.setdefault("__warningregistry__", {}),
                           module_globals=g, source=m.source)
