"""Time spent writing files inside the loop: `torch.save` (checkpoints), and where loaded,
`numpy.save`/`numpy.savez`, `PIL.Image.Image.save` and `torchvision.utils.save_image`
(sample images). Modules imported after torch are patched at a step end within 16 steps.
"""
import sys

from . import phases, sites
from .guard import G, fail, patch
from .state import S, now

_depth = [0]
_pending = {"numpy": ("save", "savez", "savez_compressed"),
            "PIL.Image": None, "torchvision.utils": ("save_image",),
            "safetensors.torch": ("save_file", "save_model")}  # HF Trainer's default checkpoint format


def _timed(fn, where):
    def wrapper(*args, **kwargs):
        if G.off or _depth[0] or not S.mine():
            return fn(*args, **kwargs)
        _depth[0] += 1
        t0 = now()
        try:
            return fn(*args, **kwargs)
        finally:
            _depth[0] -= 1
            ns = now() - t0
            S.io_ns += ns
            S.io_n += 1
            phases.wrote(ns)
            sites.hit("io", ns)
    wrapper.__wrapped__ = fn
    for a in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, a, getattr(fn, a))
        except Exception:
            pass
    return wrapper


def install(torch):
    orig = patch(torch, "save", None)
    torch.save = _timed(orig, "torch.save")
    S.add_step_hook(_patch_late)
    _patch_late(0)


def _patch_late(step):
    if not _pending:
        S.remove_step_hook(_patch_late)
        return
    if step & 15:
        return  # a module imported mid-run is picked up within 16 steps
    for name in list(_pending):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        attrs = _pending.pop(name)
        try:
            if attrs is None:  # PIL.Image: the method of the Image class
                img = getattr(mod, "Image", None)
                if img is not None and hasattr(img, "save"):
                    orig = patch(img, "save", None)
                    img.save = _timed(orig, "Image.save")
                continue
            for attr in attrs:
                if hasattr(mod, attr):
                    orig = patch(mod, attr, None)
                    setattr(mod, attr, _timed(orig, name + "." + attr))
        except Exception as e:
            fail("io hooks", e)
