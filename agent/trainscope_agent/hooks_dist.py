"""Explicit torch.distributed collectives: all_reduce, broadcast, barrier, all_gather (and
reduce_scatter / all_gather_into_tensor where present) are timed and their wall time added to
the step's `comm_ns`. DDP's gradient all-reduce runs inside backward() through the C++ reducer and
is not seen here: the run layer derives that wait from the ranks' backward times instead.
An async_op=True call costs only its launch here (its wait() is the user's).
Counted only on the loop thread and outside optimizer.step(): collectives that FSDP-style code
issues from autograd's threads during backward are already inside backward's time (the run layer
adds backward and comm as the step's sync time, so they must not be counted twice).
Under torch.compile the wrapper calls the original and nothing else (G.compiling() is folded to
True while Dynamo traces), and the wrapper is added to Dynamo's table of collectives it rewrites
(`torch.distributed._functional_collectives.traceable_collective_remaps`, keyed on the original
functions), mapped like its original, so compiled code that calls `dist.all_reduce` still gets
the functional collective it would get without us.

DDP's construction line is kept for the model the loop trains (`ddp_site`): communication-bound's
fix is an argument there (bucket_cap_mb, gradient_as_bucket_view) or a no_sync() around the step."""
import sys
import weakref

from . import sites, warn_through
from .guard import G, fail, patch
from .state import S, now

NAMES = ("all_reduce", "broadcast", "barrier", "all_gather", "reduce_scatter", "all_gather_into_tensor",
         "reduce", "gather", "scatter", "all_to_all")


_wrappers = {}  # original -> our wrapper (for Dynamo's remap table)


def install(torch):
    dist = getattr(torch, "distributed", None)
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        return
    for name in NAMES:
        if callable(getattr(dist, name, None)):
            _wrap(dist, name)
    register_remaps()
    S.add_step_hook(_remap_late)
    _install_ddp_site(torch)


def register_remaps():
    """Adds each wrapper to Dynamo's collective remap table under its original's entry, once the
    table's module is loaded (we never import it ourselves). Returns True when done."""
    fc = sys.modules.get("torch.distributed._functional_collectives")
    table = getattr(fc, "traceable_collective_remaps", None) if fc is not None else None
    if not isinstance(table, dict):
        return False
    for original, wrapper in _wrappers.items():
        try:
            if original in table and wrapper not in table:
                table[wrapper] = table[original]
        except TypeError:
            pass
    return True


def _remap_late(step):
    # torch.compile loads the table on first use: look every 16 steps until it is there (a job
    # that has not compiled anything by step 4096 will not; the guard above suffices anyway).
    if step & 15 == 0 and (register_remaps() or step >= 4096):
        S.remove_step_hook(_remap_late)


def _wrap(dist, name):
    original = patch(dist, name, None)

    def collective(*args, **kwargs):
        if G.compiling() or G.off or S.in_opt or not S.mine():
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
    _wrappers[original] = collective
    collective.__wrapped__ = original
    collective.__name__ = name
    collective.__doc__ = getattr(original, "__doc__", None)
    setattr(dist, name, collective)


_ddp_sites = weakref.WeakKeyDictionary()  # DDP instance -> sites.Site of its construction


def _install_ddp_site(torch):
    """Notes where the user's own code builds a DistributedDataParallel: one frame walk per
    construction, nothing per step. One a framework builds (Lightning's strategy, accelerate's
    prepare) has its knobs elsewhere and is not noted. The site joins the report only for the model
    the loop trains (ddp_site)."""
    ddp = getattr(getattr(getattr(torch, "nn", None), "parallel", None), "DistributedDataParallel", None)
    if not isinstance(ddp, type):
        return
    init_orig = patch(ddp, "__init__", None)

    def __init__(self, *args, **kwargs):
        warn_through.call(init_orig, self, *args, **kwargs)
        if G.off:
            return
        try:
            caller = sites.outside_agent(sys._getframe(1))  # past any wrapper of ours, as hooks_data's
            if caller is None or not sites.is_user_file(caller.f_code.co_filename):
                return
            s = sites.where("ddp", 2, "DistributedDataParallel")
            if s is not None:
                _ddp_sites[self] = s
        except Exception as e:
            fail("DDP site", e)

    __init__.__wrapped__ = init_orig  # inspect.signature(DDP.__init__) stays DDP's own
    ddp.__init__ = __init__


def ddp_site(module):
    """The construction site of `module` if it is a DDP the agent saw built, added to the sites sent."""
    try:
        s = _ddp_sites.get(module)
    except TypeError:
        return None
    return sites.add(s) if s is not None else None
