"""Loads a TARGET (`path/to/file.py:factory` or `package.module:factory`) and normalises what the
factory returns into a Target: model, data, loss and how one training step uses them.

The factory contract (docs/LAB.md) - the factory takes no arguments and returns a dict:
  model       torch.nn.Module                                 (required)
  loss_fn     callable(output, target) -> scalar loss          (required unless `forward` is given)
  loader      a torch.utils.data.DataLoader                    (or `dataset` + `batch_size`)
  dataset     a map-style Dataset; batch_size defaults to 32
  collate_fn  optional, used with `dataset`
  optimizer   optional callable(params) -> torch.optim.Optimizer (default Adam, lr 1e-4)
  forward     optional callable(model, batch) -> loss, for batches that are not (inputs, targets)
A tuple (model, loader_or_dataset, loss_fn) is accepted too.
"""
import importlib
import importlib.util
import os
import sys


class TargetError(Exception):
    pass


def load_factory(spec):
    if ":" not in spec:
        raise TargetError("TARGET %r: expected path/to/file.py:factory or package.module:factory" % spec)
    where, name = spec.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise TargetError("%s: no such file" % where)
        sys.path.insert(0, os.path.dirname(path))  # the target's own sibling imports
        modname = "_trainscope_target_" + os.path.splitext(os.path.basename(path))[0]
        mspec = importlib.util.spec_from_file_location(modname, path)
        module = importlib.util.module_from_spec(mspec)
        sys.modules[modname] = module
        mspec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise TargetError("%s: has no callable %r" % (where, name))
    return fn


class Target:
    def __init__(self, model, loss_fn, dataset, batch_size, loader, collate_fn, make_optimizer, forward):
        self.model = model
        self.loss_fn = loss_fn
        self.dataset = dataset
        self.batch_size = batch_size
        self.loader = loader  # the user's DataLoader, if one was given (its settings are kept)
        self.collate_fn = collate_fn
        self.make_optimizer = make_optimizer
        self.forward = forward

    def optimizer(self, params):
        if self.make_optimizer is not None:
            return self.make_optimizer(params)
        import torch

        return torch.optim.Adam(params, lr=1e-4)

    def loss(self, model, batch):
        if self.forward is not None:
            return self.forward(model, batch)
        if not isinstance(batch, (list, tuple)) or len(batch) < 2:
            raise TargetError("batches must be (inputs, targets); give the factory a `forward(model, batch)`")
        x, y = batch[0], batch[1]
        out = model(*x) if isinstance(x, (list, tuple)) else model(x)
        return self.loss_fn(out, y)

    def is_map_style(self):
        return self.dataset is not None and hasattr(self.dataset, "__getitem__") and hasattr(self.dataset, "__len__")

    def first_input(self, batch):
        if self.forward is None and isinstance(batch, (list, tuple)) and batch:
            return batch[0]
        return batch


def build(spec):
    try:
        return _build(spec)
    except TargetError:
        raise
    except Exception as e:  # the user's module or factory failed: still the target's fault, say so
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise TargetError("%s: %s: %s" % (spec, type(e).__name__, first)) from e


def _build(spec):
    from torch.utils.data import DataLoader

    made = load_factory(spec)()
    if isinstance(made, (tuple, list)):
        if len(made) != 3:
            raise TargetError("factory returned a tuple of %d; expected (model, data, loss_fn) or a dict" % len(made))
        made = {"model": made[0], "loss_fn": made[2],
                ("loader" if isinstance(made[1], DataLoader) else "dataset"): made[1]}
    if not isinstance(made, dict):
        raise TargetError("factory returned %s; expected a dict with model, loss_fn and loader/dataset"
                          % type(made).__name__)
    model = made.get("model")
    if model is None or not hasattr(model, "parameters"):
        raise TargetError("factory's result has no `model` (a torch.nn.Module)")
    if made.get("loss_fn") is None and made.get("forward") is None:
        raise TargetError("factory's result has neither `loss_fn` nor `forward`")
    loader = made.get("loader")
    dataset = made.get("dataset")
    batch_size = made.get("batch_size")
    collate_fn = made.get("collate_fn")
    if loader is not None:
        if not isinstance(loader, DataLoader):
            raise TargetError("`loader` is a %s, not a DataLoader" % type(loader).__name__)
        dataset = loader.dataset
        batch_size = loader.batch_size if loader.batch_size is not None else batch_size
        collate_fn = loader.collate_fn
    if dataset is None:
        raise TargetError("factory's result has neither `loader` nor `dataset`")
    if batch_size is None:
        batch_size = 32
    return Target(model, made.get("loss_fn"), dataset, int(batch_size), loader, collate_fn,
                  made.get("optimizer"), made.get("forward"))


def loader_kwargs(target, num_workers=None, pin_memory=None, prefetch_factor=None, persistent_workers=None):
    """The DataLoader settings to use: the user's loader's own, overridden by the given ones."""
    src = target.loader
    kw = {
        "batch_size": target.batch_size,
        "num_workers": src.num_workers if src is not None else 0,
        "pin_memory": src.pin_memory if src is not None else False,
        "drop_last": True,
        "shuffle": False,  # a fixed data slice: the same samples, in the same order, for every configuration
    }
    if target.collate_fn is not None:
        kw["collate_fn"] = target.collate_fn
    if num_workers is not None:
        kw["num_workers"] = num_workers
    if pin_memory is not None:
        kw["pin_memory"] = pin_memory
    if kw["num_workers"] > 0:
        pf = prefetch_factor if prefetch_factor is not None else (getattr(src, "prefetch_factor", None) if src else None)
        if pf is not None:
            kw["prefetch_factor"] = pf
        pw = persistent_workers if persistent_workers is not None else (
            getattr(src, "persistent_workers", False) if src else False)
        kw["persistent_workers"] = bool(pw)
        if src is not None and getattr(src, "worker_init_fn", None) is not None:
            kw["worker_init_fn"] = src.worker_init_fn
    return kw


def fixed_slice(target, samples):
    """The first `samples` samples of a map-style dataset (wrapping around when it is shorter)."""
    from torch.utils.data import Subset

    if not target.is_map_style():
        return target.dataset  # an IterableDataset: its own order is the slice
    n = len(target.dataset)
    if n == 0:
        raise TargetError("the dataset is empty")
    return Subset(target.dataset, [i % n for i in range(samples)])
