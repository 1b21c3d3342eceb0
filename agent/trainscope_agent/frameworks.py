"""Where a framework is configured: the user's `TrainingArguments(...)` (Hugging Face) and
`Trainer(...)` (Lightning). A framework builds the DataLoader and the optimizer in its own code,
so their construction site is the user's `trainer.train()` / `trainer.fit()` line; the knob that
changes them (`dataloader_num_workers`, `bf16`, `optim`, `torch_compile`, `precision`) is at the
configuration line, which this module records as a `config` site with the knobs' values.

The framework's module is patched right after it is imported (a one-shot meta-path finder per
module, as for torch in __init__.py): nothing is imported on the user's behalf.
"""
import sys

from . import sites, warn_through
from .guard import G, fail, patch
from .state import S

# module -> (class, method to wrap, framework, knobs read from the instance)
_WATCH = {
    "transformers.training_args": ("TrainingArguments", "__post_init__", "transformers",
                                   ("dataloader_num_workers", "dataloader_pin_memory",
                                    "dataloader_persistent_workers", "dataloader_prefetch_factor",
                                    "bf16", "fp16", "optim", "torch_compile", "gradient_accumulation_steps",
                                    "per_device_train_batch_size", "eval_steps", "save_steps", "max_steps",
                                    "num_train_epochs")),
    "lightning.pytorch.trainer.trainer": ("Trainer", "__init__", "lightning",
                                          ("precision", "accumulate_grad_batches", "val_check_interval",
                                           "max_epochs", "max_steps", "detect_anomaly")),
    "pytorch_lightning.trainer.trainer": ("Trainer", "__init__", "lightning",
                                          ("precision", "accumulate_grad_batches", "val_check_interval",
                                           "max_epochs", "max_steps", "detect_anomaly")),
}


def install():
    for name in _WATCH:
        mod = sys.modules.get(name)
        if mod is not None:
            _patch(name, mod)
    pending = [n for n in _WATCH if n not in sys.modules]
    if pending:
        sys.meta_path.insert(0, _Finder(pending))


class _Finder:
    """Lets the real finders find a watched module, then patches it right after it executed."""

    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        self.names.discard(name)
        if not self.names:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
        # find_spec again without us (we are no longer asked for this name)
        spec = None
        for finder in sys.meta_path:
            if finder is self:
                continue
            fs = getattr(finder, "find_spec", None)
            if fs is None:
                continue
            try:
                spec = fs(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader, name)
        return spec


class _Loader:
    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            module.__spec__.loader = self._loader
            module.__loader__ = self._loader
        except Exception:
            pass
        self._loader.exec_module(module)
        _patch(self._name, module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _patch(modname, mod):
    if G.off:
        return
    cls_name, meth, framework, knobs = _WATCH[modname]
    try:
        cls = getattr(mod, cls_name, None)
        if cls is None or getattr(cls, "_trainscope_config", False) or not hasattr(cls, meth):
            return
        orig = patch(cls, meth, None)

        def wrapper(self, *args, **kwargs):
            r = warn_through.call(orig, self, *args, **kwargs)
            if not G.off:
                try:
                    _record(self, framework, cls_name, knobs)
                except Exception as e:
                    fail("framework config site", e)
            return r

        wrapper.__wrapped__ = orig
        for a in ("__name__", "__qualname__", "__doc__"):
            try:
                setattr(wrapper, a, getattr(orig, a))
            except Exception:
                pass
        setattr(cls, meth, wrapper)
        cls._trainscope_config = True
    except Exception as e:
        fail("framework config", e)


def _record(obj, framework, cls_name, knobs):
    site = sites.where("config", 3, framework + "." + cls_name, caller=True)
    if site is None:
        return
    site = sites.add(site)
    vals = []
    for k in knobs:
        v = getattr(obj, k, None)
        if v is None:
            # Lightning keeps the precision on its connector: read it where it lives
            if k == "precision":
                v = getattr(getattr(obj, "_accelerator_connector", None), "_precision_flag", None)
            elif k == "detect_anomaly":  # Trainer(detect_anomaly=True) keeps it private
                v = getattr(obj, "_detect_anomaly", None)
        if v is not None:
            vals.append(("knob_" + k, getattr(v, "value", v)))
    S.channel.send_text("config", [("framework", framework), ("class", cls_name),
                                   ("site_file", site.file), ("site_line", site.line)] + vals)
