"""`trainscope run --set KEY=VALUE`: settings applied to the user's unchanged script at run time.

TRAINSCOPE_SET holds one `key=value` per line (trainscope has validated every key and value).
Each override is decided once per process and reported in an `override` text record
(key, value, applied 1/0, reason): as soon as it takes effect or cannot, and at exit for the ones
the process never gave a chance ("no DataLoader in this script"); trainscope counts a setting
applied when any process applied it (mp.spawn's parent builds no DataLoader, its ranks do).
Overrides act in every training process (the script, torchrun's and mp.spawn's ranks), never in
DataLoader workers (a worker's own `torch.set_num_threads(1)` stays). Like every hook, a failure here switches the agent off and the
training goes on with the user's own settings.

  dataloader.num_workers / .pin_memory / .prefetch_factor / .persistent_workers
      replace the DataLoader's arguments when it is constructed
  copy.non_blocking=true     host-to-device `.to()` / `.cuda()` get non_blocking=True (CUDA only)
  autocast=bf16              the model's forward runs under torch.autocast(dtype=torch.bfloat16)
  compile=true|MODE          the model is torch.compile'd in place (PyTorch >= 2.0)
  optimizer.fused=true       torch.optim optimizers built with fused=True (where the class has it)
  optimizer.foreach=true     ... with foreach=True
  threads=N                  torch.set_num_threads(N), and the script's own calls keep N
  malloc.mmap=false          glibc's mallopt(M_MMAP_MAX, 0): large blocks reused from malloc's heap
  zero_grad.set_to_none=true zero_grad() frees gradients instead of zeroing them
  autograd.detect_anomaly=false  the script's calls that turn anomaly detection on are ignored
"""
import atexit
import inspect
import multiprocessing
import os

from . import fused, warn_through
from .guard import G, fail, patch
from .state import S

_values = {}     # key -> value string
_decided = {}    # key -> (applied, reason)
_model = None    # the module whose forward the overrides wrap (first called module with parameters)


def parse(text):
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _truthy(v):
    return v.lower() in ("1", "true", "yes", "on")


def _main_process():
    """A training process: anything but a DataLoader worker. A multiprocessing child trains too
    (mp.spawn's ranks, a Process(target=train)); only torch's worker loop is a helper. Asked when
    a setting acts (a DataLoader or optimizer built, set_num_threads called), so a spawn-started
    worker, which imports torch before it knows it is one, is recognised by then."""
    try:
        torch = S.torch
        if torch is not None and torch.utils.data.get_worker_info() is not None:
            return False
        target = getattr(multiprocessing.current_process(), "_target", None)
        return getattr(target, "__name__", "") != "_worker_loop"
    except Exception:
        return True


def decide(key, applied, reason):
    if key in _decided or key not in _values:
        return
    _decided[key] = (applied, reason)
    try:
        S.channel.send_text("override", [("key", key), ("value", _values[key]),
                                         ("applied", 1 if applied else 0), ("reason", reason)])
    except Exception:
        pass


def install(torch):
    _values.update(parse(os.environ.get("TRAINSCOPE_SET", "")))
    if not _values or not _main_process():
        return
    atexit.register(_at_exit)
    cuda = _Cuda(torch)
    keys = set(_values)
    if keys & {"dataloader.num_workers", "dataloader.pin_memory", "dataloader.prefetch_factor",
               "dataloader.persistent_workers"}:
        _install_dataloader(torch, cuda)
    if "copy.non_blocking" in keys:
        if not cuda():
            decide("copy.non_blocking", False, "CUDA only, and this run has no CUDA device")
        elif not _truthy(_values["copy.non_blocking"]):
            decide("copy.non_blocking", False, "non_blocking=False is PyTorch's default: the copies are left as written")
        else:
            _install_non_blocking(torch)
    if "threads" in keys:
        _install_threads(torch)
    if "zero_grad.set_to_none" in keys:
        _install_zero_grad(torch)
    if keys & {"optimizer.fused", "optimizer.foreach"}:
        _install_optimizer(torch)
    if "malloc.mmap" in keys:
        _install_malloc()
    if "autograd.detect_anomaly" in keys:
        from . import anomaly
        anomaly.A.force_off = not _truthy(_values["autograd.detect_anomaly"])
    if "compile" in keys and not hasattr(torch, "compile"):
        decide("compile", False, "torch.compile needs PyTorch 2.0 or newer (this is %s)" % torch.__version__)
    if "autocast" in keys or ("compile" in keys and "compile" not in _decided):
        _install_model_hook(torch)


class _Cuda:
    """Whether this process can use CUDA, asked only when a CUDA-only setting needs the answer
    (torch.cuda.is_available() reads the driver's device count, it does not initialise CUDA;
    asking late keeps a CUDA_VISIBLE_DEVICES the script sets after `import torch` effective)."""

    def __init__(self, torch):
        self.torch = torch
        self.known = None

    def __call__(self):
        if self.known is None:
            self.known = bool(self.torch.cuda.is_available())
        return self.known


def _at_exit():
    if not _main_process():
        return  # a DataLoader worker (forked after install) has nothing to answer for
    why = {
        "dataloader": "no DataLoader in this script",
        "copy": "the script made no host-to-device copy",
        "threads": "not set",
        "zero_grad": "the script never calls zero_grad()",
        "optimizer": "no torch.optim optimizer was created",
        "compile": "no nn.Module with parameters was called",
        "autocast": "no nn.Module with parameters was called",
        "autograd": "the script never turns anomaly detection on",
        "malloc": "not set",
    }
    for key in list(_values):
        if key not in _decided:
            decide(key, False, why.get(key.split(".")[0], "never reached"))


# --- malloc ------------------------------------------------------------------------------------

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's malloc.h


def _install_malloc():
    """malloc.mmap=false: glibc's malloc serves every block from its heap and keeps freed memory
    there (up to 2 GiB free at its top), so a large tensor freed and allocated again every step
    reuses pages instead of the kernel mapping and zeroing new ones (page-fault-churn). The same
    as MALLOC_MMAP_MAX_=0 in the environment, from the moment torch is imported: blocks mapped
    before stay mapped. DataLoader workers forked later inherit it."""
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        decide("malloc.mmap", False, "this process's C library has no mallopt (not glibc)")
        return
    if mallopt(M_MMAP_MAX, 0) != 1 or mallopt(M_TRIM_THRESHOLD, 0x7FFFFFFF) != 1:
        decide("malloc.mmap", False, "mallopt refused M_MMAP_MAX=0")
        return
    decide("malloc.mmap", True, "mallopt(M_MMAP_MAX, 0), mallopt(M_TRIM_THRESHOLD, 2 GiB): large blocks stay in "
           "malloc's heap")


# --- DataLoader --------------------------------------------------------------------------------

def _install_dataloader(torch, cuda):
    dl_cls = torch.utils.data.DataLoader
    init_orig = patch(dl_cls, "__init__", None)
    params = inspect.signature(init_orig).parameters

    def __init__(self, *args, **kwargs):
        if G.off or not _main_process():
            return warn_through.call(init_orig, self, *args, **kwargs)
        try:
            kw = _loader_kwargs(torch, params, args, kwargs, cuda)
        except Exception as e:
            fail("override dataloader", e)
            return warn_through.call(init_orig, self, *args, **kwargs)
        return warn_through.call(init_orig, self, **kw)

    dl_cls.__init__ = __init__


def _loader_kwargs(torch, params, args, kwargs, cuda):
    """The user's arguments with the overrides put in (positional ones moved to keywords)."""
    names = [n for n in params if n != "self"]
    kw = dict(kwargs)
    for name, value in zip(names, args):
        kw[name] = value
    v = _values
    if "dataloader.num_workers" in v:
        old = kw.get("num_workers", 0)
        kw["num_workers"] = int(v["dataloader.num_workers"])
        decide("dataloader.num_workers", True, "DataLoader num_workers %s -> %s" % (old, kw["num_workers"]))
    workers = kw.get("num_workers", 0) or 0
    if workers <= 0:
        # Loading moved into the main process: PyTorch refuses these without workers.
        kw.pop("prefetch_factor", None)
        kw.pop("persistent_workers", None)
    if "dataloader.pin_memory" in v:
        if _truthy(v["dataloader.pin_memory"]) and not cuda():
            decide("dataloader.pin_memory", False, "CUDA only, and this run has no CUDA device")
        else:
            kw["pin_memory"] = _truthy(v["dataloader.pin_memory"])
            decide("dataloader.pin_memory", True, "DataLoader pin_memory=%s" % kw["pin_memory"])
    for key, arg in (("dataloader.prefetch_factor", "prefetch_factor"),
                     ("dataloader.persistent_workers", "persistent_workers")):
        if key not in v:
            continue
        if workers <= 0:
            # PyTorch refuses both without workers (ValueError): leave the user's loader as it is.
            decide(key, False, "needs worker processes and this DataLoader has num_workers=0")
            continue
        kw[arg] = int(v[key]) if arg == "prefetch_factor" else _truthy(v[key])
        decide(key, True, "DataLoader %s=%s" % (arg, kw[arg]))
    return kw


# --- host-to-device copies ---------------------------------------------------------------------

def _install_non_blocking(torch):
    T = torch.Tensor
    to_orig = patch(T, "to", None)
    cuda_orig = patch(T, "cuda", None)

    def _to_cuda(args, kwargs):
        d = kwargs.get("device", args[0] if args else None)
        if isinstance(d, torch.device):
            return d.type == "cuda"
        return isinstance(d, str) and d.startswith("cuda")

    def to(self, *args, **kwargs):
        if not G.off and not self.is_cuda and len(args) < 3 and _to_cuda(args, kwargs):
            if "non_blocking" not in kwargs:
                kwargs["non_blocking"] = True
                decide("copy.non_blocking", True, "host-to-device .to() calls get non_blocking=True")
            else:
                _already(kwargs["non_blocking"], self)
        return to_orig(self, *args, **kwargs)

    def cuda(self, *args, **kwargs):
        if not G.off and not self.is_cuda and len(args) < 2:
            if "non_blocking" not in kwargs:
                kwargs["non_blocking"] = True
                decide("copy.non_blocking", True, "host-to-device .cuda() calls get non_blocking=True")
            else:
                _already(kwargs["non_blocking"], self)
        return cuda_orig(self, *args, **kwargs)

    T.to = to
    T.cuda = cuda


def _already(non_blocking, src):
    """A copy that already says non_blocking (Lightning's and accelerate's batch transfer pass
    non_blocking=True themselves): the setting is the script's already, and only pinned memory
    makes it asynchronous (PyTorch's "A guide on good usage of non_blocking and pin_memory()")."""
    if "copy.non_blocking" in _decided:
        return
    if non_blocking:
        try:
            pinned = bool(src.is_pinned())
        except Exception:
            pinned = False
        decide("copy.non_blocking", False,
               "the script's host-to-device copies already pass non_blocking=True (a framework's batch "
               "transfer); " + ("their source is pinned" if pinned else
                                "their source is not pinned, so they still block: pin_memory=True makes them async"))
    else:
        decide("copy.non_blocking", False, "the script passes non_blocking=False explicitly: left as it is")


# --- threads, zero_grad, optimizers ------------------------------------------------------------

def _install_threads(torch):
    n = int(_values["threads"])
    before = torch.get_num_threads()
    set_orig = patch(torch, "set_num_threads", None)
    set_orig(n)
    decide("threads", True, "torch.set_num_threads(%d) (was %d); the script's own calls keep %d" % (n, before, n))

    def set_num_threads(k):
        if G.off or not _main_process():
            return set_orig(k)
        return set_orig(n)

    torch.set_num_threads = set_num_threads


def _install_zero_grad(torch):
    for owner in (torch.optim.Optimizer, torch.nn.Module):
        _wrap_zero_grad(owner)


def _wrap_zero_grad(owner):
    orig = patch(owner, "zero_grad", None)
    want = _truthy(_values["zero_grad.set_to_none"])
    what = ("zero_grad(set_to_none=True): gradients freed, not zeroed" if want else
            "zero_grad(set_to_none=False): gradients zeroed in place, not freed")

    def zero_grad(self, *args, **kwargs):
        if G.off:
            return orig(self, *args, **kwargs)
        if not args:
            kwargs["set_to_none"] = want
            decide("zero_grad.set_to_none", True, what)
        return orig(self, *args, **kwargs)

    owner.zero_grad = zero_grad


def _install_optimizer(torch):
    optim = torch.optim
    for name in dir(optim):
        cls = getattr(optim, name)
        if isinstance(cls, type) and issubclass(cls, optim.Optimizer) and cls is not optim.Optimizer:
            _wrap_optimizer(torch, cls)


def _wrap_optimizer(torch, cls):
    init_orig = patch(cls, "__init__", None)
    try:
        accepts = set(inspect.signature(init_orig).parameters)
    except (TypeError, ValueError):
        accepts = set()

    def __init__(self, params, *args, **kwargs):
        if G.off or type(self) is not cls:  # a subclass's super().__init__: its own class decides
            return warn_through.call(init_orig, self, params, *args, **kwargs)
        try:
            params = list(params)  # a generator can be read once: keep the tensors for the check
            _optimizer_kwargs(torch, cls, accepts, params, kwargs)
        except Exception as e:
            fail("override optimizer", e)
        return warn_through.call(init_orig, self, params, *args, **kwargs)

    cls.__init__ = __init__


def _optimizer_kwargs(torch, cls, accepts, params, kwargs):
    tensors = []
    for p in params:
        tensors.extend(p["params"] if isinstance(p, dict) else [p])
    fused_here = fused.runs_on(tensors)
    version = torch.__version__
    for key, arg in (("optimizer.fused", "fused"), ("optimizer.foreach", "foreach")):
        if key not in _values:
            continue
        want = _truthy(_values[key])  # false is asked for too: the single-tensor loop, to compare
        if arg not in accepts:
            decide(key, False, "%s in PyTorch %s has no %s= argument" % (cls.__name__, version, arg))
        elif arg == "fused" and want and not fused_here:
            decide(key, False, "PyTorch %s has fused optimizer kernels for %s only, not the parameters' device"
                   % (version, ", ".join(sorted(d for d in fused.devices() if d))))
        elif arg == "foreach" and want and kwargs.get("fused"):
            # PyTorch refuses both at once; fused is the faster of the two
            kwargs.pop("foreach", None)
            decide(key, False, "fused=True is applied instead: %s takes one of the two" % cls.__name__)
        else:
            kwargs[arg] = want
            decide(key, True, "%s(%s=%s)" % (cls.__name__, arg, want))


# --- the model: bf16 autocast and torch.compile ------------------------------------------------

def _install_model_hook(torch):
    hook_api = torch.nn.modules.module
    if not hasattr(hook_api, "register_module_forward_pre_hook"):
        for key in ("autocast", "compile"):
            decide(key, False, "PyTorch %s has no global module hooks to find the model" % torch.__version__)
        return
    handle = []

    def pre(module, inputs):
        if G.off or _model is not None or not _main_process():
            return None
        try:
            next(module.parameters())
        except StopIteration:
            return None  # a loss or a transform: the model is the first module with parameters
        except Exception as e:
            fail("override model", e)
            return None
        try:
            for h in handle:
                h.remove()
            _wrap_model(torch, module)
        except Exception as e:
            fail("override model", e)
        return None

    handle.append(hook_api.register_module_forward_pre_hook(pre))


def _wrap_model(torch, module):
    """From the model's next call on (this one is already under way): compiled, then autocast."""
    global _model
    _model = module
    name = type(module).__name__
    forward = module.forward
    if "compile" in _values and "compile" not in _decided:
        mode = _values["compile"]
        mode = None if _truthy(mode) or mode == "default" else mode
        forward = torch.compile(forward, mode=mode)
        decide("compile", True, "torch.compile(%s%s)" % (name, ", mode=%r" % mode if mode else ""))
    if "autocast" in _values:
        try:
            device = next(module.parameters()).device.type
        except StopIteration:
            device = "cpu"
        dtype = getattr(torch, _values["autocast"] if _values["autocast"] != "bf16" else "bfloat16")
        inner = forward

        def autocast_forward(*args, **kwargs):
            if G.off:
                return inner(*args, **kwargs)
            with torch.autocast(device_type=device, dtype=dtype):
                return inner(*args, **kwargs)

        forward = autocast_forward
        decide("autocast", True, "%s's forward under torch.autocast(%r, dtype=torch.bfloat16)" % (name, device))
    module.forward = forward  # an instance attribute: nothing else of the class changes
