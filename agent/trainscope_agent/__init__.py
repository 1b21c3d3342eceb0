"""trainscope's in-process agent (see docs/AGENT.md).

`start()` runs from sitecustomize in every Python process `trainscope run` launches. It opens the
channel and arms a one-shot import hook; nothing touches torch until the user's code imports it,
so start-up cost and import order stay the user's. All configuration comes from the environment:
  TRAINSCOPE_AGENT_FIFO     channel path (set by trainscope; absent: the agent does nothing)
  TRAINSCOPE_OUT            output directory (the profiler trace goes there)
  TRAINSCOPE_PROFILE_STEPS  "10-14" (default) or "off"
  TRAINSCOPE_STOP_AFTER     N: end the program after step N (--steps)
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
    ch.send_text("hello", [
        ("python", sys.version.split()[0]),
        ("executable", sys.executable),
        ("ppid", os.getppid()),
        ("rank", os.environ.get("RANK")),
        ("world_size", os.environ.get("WORLD_SIZE")),
    ])
    try:
        S.stop_after = int(os.environ.get("TRAINSCOPE_STOP_AFTER", "0") or 0)
    except ValueError:
        S.stop_after = 0
    from . import finish
    atexit.register(finish.at_exit)
    if "torch" in sys.modules:
        on_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportHook())


class _TorchImportHook:
    """Meta-path finder that lets the real finders find torch, then runs on_torch() right after
    torch's own __init__ has finished. Removes itself on first use."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return None
        spec.loader = _LoaderProxy(spec.loader)
        return spec


class _LoaderProxy:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        spec = module.__spec__
        try:
            spec.loader = self._loader
            module.__loader__ = self._loader
        except Exception:
            pass
        self._loader.exec_module(module)
        on_torch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def on_torch(torch):
    if G.off or S.torch is not None:
        return
    try:
        S.torch = torch
        import torch.utils.data  # noqa: F401  (already loaded by torch/__init__)
        import torch.optim  # noqa: F401
        from . import hooks_copy, hooks_data, hooks_io, hooks_model, settings
        hooks_data.install(torch)
        hooks_model.install(torch)
        hooks_copy.install(torch)
        hooks_io.install(torch)
        settings.install(torch)
        _arm_window(torch)
    except Exception as e:
        fail("install", e)


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
    from .profiler_window import Window
    S.window = Window(torch, S.channel, first, last, out)
