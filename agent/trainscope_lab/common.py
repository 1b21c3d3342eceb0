"""Shared plumbing for the runners: the result line, progress, memory probes, feature detection."""
import ctypes
import json
import os
import random
import sys
import time
import traceback

from . import PROTOCOL, RESULT_PREFIX


class UsageError(Exception):
    """A wrong option for this machine (reported as is, without a location)."""


def emit(kind, status, **fields):
    """Prints the one result line the C++ side parses (last line wins)."""
    out = {"trainscope_lab": PROTOCOL, "kind": kind, "status": status}
    out.update(fields)
    sys.stdout.flush()
    sys.stdout.write(RESULT_PREFIX + json.dumps(out, allow_nan=False, default=_jsonable) + "\n")
    sys.stdout.flush()


def _jsonable(v):
    try:
        return float(v)
    except Exception:
        return str(v)


def progress(done, total, label=""):
    sys.stderr.write("@ts-progress %d %d %s\n" % (done, total, label))
    sys.stderr.flush()


def fail(kind, exc, **fields):
    """Reports an exception raised by the user's code as one readable line (plus where it came from)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    if type(exc).__name__ == "UsageError":  # ours, already a full sentence
        traceback.print_exc(file=sys.stderr)
        emit(kind, "error", reason=str(exc), **fields)
        return
    if tb and type(exc).__name__ != "TargetError":  # where the user's code failed
        f = tb[-1]
        where = " (%s:%d)" % (os.path.basename(f.filename), f.lineno)
    msg = "%s: %s%s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "", where)
    traceback.print_exc(file=sys.stderr)
    emit(kind, "error", reason=msg, **fields)


def seed_everything(seed):
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except Exception:
        pass


# ---- memory -------------------------------------------------------------------------------------

def _status_kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def rss_bytes():
    return _status_kb("VmRSS")


def peak_rss_bytes():
    return _status_kb("VmHWM")


def reset_peak_rss():
    """Resets VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs). False if refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_libc = None


def trim_heap():
    """Gives freed heap pages back to the OS so the next RSS peak measures only new allocations."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)
    except Exception:
        pass


def tensor_bytes(obj):
    """Bytes held by the tensors in a (nested) batch: for /dev/shm estimates."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.element_size() * obj.nelement()
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(tensor_bytes(o) for o in obj.values())
    return 0


def param_bytes(model):
    n = sum(p.element_size() * p.nelement() for p in model.parameters())
    n += sum(b.element_size() * b.nelement() for b in model.buffers())
    return n


def optimizer_state_bytes(opt):
    import torch

    n = 0
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor):
                n += v.element_size() * v.nelement()
    return n


# ---- devices and features -----------------------------------------------------------------------

def pick_device(name):
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device %s: torch.cuda.is_available() is False" % name)
    return name


def device_info(device):
    import torch

    info = {"torch_version": torch.__version__, "python_version": sys.version.split()[0], "device": device,
            "cpu_threads": torch.get_num_threads()}
    if device.startswith("cuda"):
        idx = torch.device(device).index or 0
        info["device_name"] = torch.cuda.get_device_name(idx)
        cap = torch.cuda.get_device_capability(idx)
        info["device_capability"] = cap[0] * 10 + cap[1]
        info["device_mem_total_bytes"] = torch.cuda.get_device_properties(idx).total_memory
        info["cuda_version"] = torch.version.cuda
    else:
        info["device_name"] = "cpu"
    return info


def oom_error_types():
    """The exceptions that mean 'out of device memory' in this PyTorch (1.13 added OutOfMemoryError)."""
    import torch

    t = getattr(torch.cuda, "OutOfMemoryError", None)
    return (t,) if t is not None else ()


def is_oom(exc):
    if isinstance(exc, oom_error_types()):
        return True
    # Before 1.13 an OOM was a plain RuntimeError; cuBLAS/cuDNN workspace failures are the same thing.
    msg = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in msg or "STATUS_ALLOC_FAILED" in msg)


def sync(device):
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def to_device(batch, device, channels_last=False):
    import torch

    if isinstance(batch, torch.Tensor):
        t = batch.to(device, non_blocking=True)
        if channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=torch.channels_last)
        return t
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(b, device, channels_last) for b in batch)
    if isinstance(batch, dict):
        return {k: to_device(v, device, channels_last) for k, v in batch.items()}
    return batch


def batch_size_of(batch):
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() > 0 else 1
    if isinstance(batch, (list, tuple)) and batch:
        return batch_size_of(batch[0])
    if isinstance(batch, dict) and batch:
        return batch_size_of(next(iter(batch.values())))
    return 1


def percentile(sorted_vals, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_vals:
        return 0.0
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


class Stopwatch:
    def __init__(self):
        self.t0 = time.perf_counter()

    def ms(self):
        return (time.perf_counter() - self.t0) * 1000.0
