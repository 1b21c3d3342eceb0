"""Explicit torch.distributed collectives: all_reduce, broadcast, barrier, all_gather (and
reduce_scatter / all_gather_into_tensor where present) are timed and their wall time added to
the step's `comm_ns`. DDP's gradient all-reduce runs inside backward() through the C++ reducer and
is not seen here: the run layer derives that wait from the ranks' backward times instead.
An async_op=True call costs only its launch here (its wait() is the user's).
Counted only on the main thread and outside optimizer.step(): collectives that FSDP-style code
issues from autograd's threads during backward are already inside backward's time (the run layer
adds backward and comm as the step's sync time, so they must not be counted twice)."""
import threading

from .guard import G, fail, patch
from .state import S, now

_main = threading.main_thread()

NAMES = ("all_reduce", "broadcast", "barrier", "all_gather", "reduce_scatter", "all_gather_into_tensor",
         "reduce", "gather", "scatter", "all_to_all")


def install(torch):
    dist = getattr(torch, "distributed", None)
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        return
    for name in NAMES:
        if callable(getattr(dist, name, None)):
            _wrap(dist, name)


def _wrap(dist, name):
    original = patch(dist, name, None)

    def collective(*args, **kwargs):
        if G.off or S.in_opt or threading.current_thread() is not _main:
            return original(*args, **kwargs)
        t0 = now()
        try:
            return original(*args, **kwargs)
        finally:
            try:
                S.comm_ns += now() - t0
                S.comm_n += 1
            except Exception as e:
                fail("collective " + name, e)
    collective.__wrapped__ = original
    collective.__name__ = name
    collective.__doc__ = getattr(original, "__doc__", None)
    setattr(dist, name, collective)
