"""trainscope's in-process agent (see docs/AGENT.md).

`start()` runs from sitecustomize in every Python process `trainscope run` launches. It opens the
channel and watches for torch's import (import_watch.py); nothing touches torch until the user's code imports it,
so start-up cost and import order stay the user's. All configuration comes from the environment:
  TRAINSCOPE_AGENT_FIFO     channel path (set by trainscope; absent: the agent does nothing)
  TRAINSCOPE_OUT            output directory (the profiler trace goes there)
  TRAINSCOPE_PROFILE_STEPS  "10-14" (default) or "off"
  TRAINSCOPE_STOP_AFTER     N: end the program after step N (--steps)
  TRAINSCOPE_SET            key=value lines: settings applied at run time (--set, overrides.py)
"""
import atexit
import os
import sys

from .channel import Channel
from .guard import G, fail
from .state import S

_started = False


def start():
    global _started
    if _started:
        return
    _started = True
    path = os.environ.get("TRAINSCOPE_AGENT_FIFO")
    if not path:
        return
    ch = Channel(path)
    if ch.dead:
        return
    S.channel = ch
    G.channel = ch
    env = os.environ
    # Identity under torchrun (it sets these before exec'ing each rank); the launcher itself
    # has no RANK and is not a training process.
    ch.send_text("hello", [
        ("python", sys.version.split()[0]),
        ("executable", sys.executable),
        ("ppid", os.getppid()),
        ("rank", env.get("RANK")),
        ("local_rank", env.get("LOCAL_RANK")),
        ("world_size", env.get("WORLD_SIZE")),
        ("local_world_size", env.get("LOCAL_WORLD_SIZE")),
        ("group_rank", env.get("GROUP_RANK")),  # the node's rank (torchrun; c10d assigns it at rendezvous)
        ("group_world_size", env.get("GROUP_WORLD_SIZE")),
        ("run_id", env.get("TORCHELASTIC_RUN_ID")),
        ("master_addr", env.get("MASTER_ADDR")),
        ("master_port", env.get("MASTER_PORT")),
        ("launcher", _is_torchrun_launcher() or None),
        ("cwd", _cwd()),
    ])
    try:
        S.stop_after = int(os.environ.get("TRAINSCOPE_STOP_AFTER", "0") or 0)
    except ValueError:
        S.stop_after = 0
    from . import finish, startup
    atexit.register(finish.at_exit)
    startup.start()  # the profile of the time before the first step (stops at it)
    from .import_watch import watch
    watch({"torch": on_torch})  # now if imported already, else right after its __init__


def on_torch(torch):
    if G.off or S.torch is not None:
        return
    try:
        S.torch = torch
        import torch.utils.data  # noqa: F401  (already loaded by torch/__init__)
        import torch.optim  # noqa: F401
        from . import hooks_copy, hooks_data, hooks_graph, hooks_io, hooks_model, settings
        hooks_data.install(torch)
        hooks_model.install(torch)
        hooks_graph.install(torch)
        hooks_copy.install(torch)
        hooks_io.install(torch)
        settings.install(torch)
        from . import frameworks, leaks, phases, sites
        S.add_step_hook(sites.at_step)
        S.add_step_hook(phases.at_step)
        S.add_step_hook(leaks.at_step)
        frameworks.install()
        from . import anomaly
        anomaly.install(torch)
        from . import overrides  # trainscope run --set: applied last, outermost around the hooks
        overrides.install(torch)
        _arm_window(torch)
    except Exception as e:
        fail("install", e)
    if _is_torchrun_launcher():
        _fix_torchrun_std()  # a fix, not a measurement: also when the agent switched itself off
    elif not G.off:
        try:
            from . import hooks_dist
            hooks_dist.install(torch)
        except Exception as e:
            fail("distributed hooks", e)


def _cwd():
    try:
        return os.getcwd()
    except OSError:
        return None


def _is_torchrun_launcher():
    """This process is torchrun itself (`torchrun`, `python -m torch.distributed.run/launch`)."""
    try:
        argv = list(getattr(sys, "orig_argv", None) or sys.argv or [])
        if argv and os.path.basename(argv[0]) == "torchrun":
            return True
        for i, a in enumerate(argv[:-1]):
            if a == "-m" and argv[i + 1] in ("torch.distributed.run", "torch.distributed.launch"):
                return True
    except Exception:
        pass
    return False


def _fix_torchrun_std():
    """torch 1.13 on Python 3.11: `Std.from_str("0")` (torchrun's default --redirects/--tee)
    returns None, because 3.11's IntFlag no longer lists 0 or composite values as members, and
    torchrun then crashes in to_map(). Where (and only where) that is the case, values the
    original cannot map are mapped to Std(int(value)) (Std.NONE for "0"). Never raises."""
    try:
        from torch.distributed.elastic.multiprocessing import api
        Std = api.Std
        original = Std.from_str
        if original("0") is not None:
            return  # not broken here (Python < 3.11 or a fixed torch)

        def from_str(vm):
            r = original(vm)
            try:
                if r is None:
                    return Std(int(vm))
                if isinstance(r, dict) and any(v is None for v in r.values()):
                    fixed = dict(r)
                    for item in vm.split(","):
                        k, v = item.split(":")
                        if fixed.get(int(k)) is None:
                            fixed[int(k)] = Std(int(v))
                    return fixed
            except Exception:
                pass
            return r
        from_str.__wrapped__ = original
        Std.from_str = from_str
        if S.channel is not None:
            S.channel.send_text("note", [("text", "torchrun: patched Std.from_str (torch %s on Python %s "
                                                  "maps '0' to None)" % (getattr(S.torch, "__version__", "?"),
                                                                         sys.version.split()[0]))])
    except Exception:
        pass


def _arm_window(torch):
    spec = os.environ.get("TRAINSCOPE_PROFILE_STEPS", "10-14")
    out = os.environ.get("TRAINSCOPE_OUT", "")
    if spec == "off" or not out or not hasattr(torch, "profiler"):
        return
    try:
        a, b = spec.split("-")
        first, last = int(a), int(b)
    except ValueError:
        return
    if S.stop_after:
        # Keep the window inside a short --steps run: its last steps, after a warm-up step.
        n = last - first + 1
        if last > S.stop_after - 1:
            last = S.stop_after - 1
            first = max(2, last - n + 1)
            if last < first:
                return
    from .profiler_window import Window, spawned_ranks_share, watch_user_profilers
    S.window = Window(torch, S.channel, first, last, out)
    watch_user_profilers(torch)
    spawned_ranks_share(torch)
