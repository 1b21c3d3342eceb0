"""`torch.jit.script(model)` never sees the agent's hooks.

TorchScript compiles a module's forward hooks along with its forward (torch/jit/_recursive.py,
get_hook_stubs), and ours are plain Python (a try block, the agent's state): scripting the model
after the agent hooked it failed with "UnsupportedNodeError: try blocks aren't supported", where
the same script without trainscope exports its model for deployment. So `torch.jit.script` is
wrapped: while it runs, our hooks are out of every module's hook dicts, and afterwards they are put
back under their handle ids (so `RemovableHandle.remove()` still finds them). The scripted copy has
none of them; tracing (`torch.jit.trace`) and `torch.export` run the hooks in Python and need
nothing. Functions and classes pass straight through, one frame further up: `torch.jit.script`
resolves a TorchScript class's names in its caller's frame (`_frames_up`), which must stay the
user's, not this wrapper's (a class calling a module-level function failed with "undefined value").
"""
import inspect

from .guard import patch
from .pickling import ours_in

_OURS = ()  # the hook functions to keep out (hooks_model sets them)


def install(torch, hooks):
    global _OURS
    _OURS = tuple(hooks)
    jit = getattr(torch, "jit", None)
    if jit is None or not hasattr(jit, "script"):
        return
    try:
        frames = "_frames_up" in inspect.signature(jit.script).parameters
    except (TypeError, ValueError):
        frames = False
    if not frames:
        return  # a script() that does not say which frame is its caller's: not ours to wrap
    script_orig = patch(jit, "script", None)
    module_cls = torch.nn.Module

    def script(obj, optimize=None, _frames_up=0, *args, **kwargs):
        held = _take_out(obj) if isinstance(obj, module_cls) else ()
        try:
            return script_orig(obj, optimize, _frames_up + 1, *args, **kwargs)
        finally:
            for d, k, v in held:
                d[k] = v

    script.__wrapped__ = script_orig
    script.__doc__ = getattr(script_orig, "__doc__", None)
    jit.script = script


def _take_out(root):
    """Removes our hooks from root and its submodules; returns (dict, key, hook) to put back."""
    held = []
    try:
        for m in root.modules():
            for d, k in ours_in(m.__dict__, _OURS):
                held.append((d, k, d.pop(k)))
    except Exception:
        pass  # never stand in the user's way: at worst scripting sees our hooks, as before
    return held
