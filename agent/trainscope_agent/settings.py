"""Settings recorded once: versions and threads when torch is imported, the device (only once the
user's code has initialised CUDA: we never initialise it), the parallel setup (torch.distributed's
rank once the process group exists) and the float32 matmul settings (TF32) after step 1."""
import os
import sys

from .guard import fail
from .state import S


def install(torch):
    v = getattr(torch, "version", None)
    S.channel.send_text("torch", [
        ("torch_version", getattr(torch, "__version__", "")),
        ("cuda_version", getattr(v, "cuda", None) or ""),
        ("hip_version", getattr(v, "hip", None) or ""),
        ("num_threads", torch.get_num_threads()),
        ("has_compile", hasattr(torch, "compile")),
        ("argv", " ".join(getattr(sys, "argv", []))[:1000]),
    ])
    S.add_step_hook(_after_step)


def _after_step(step):
    if step != 1:
        return
    S.remove_step_hook(_after_step)
    try:
        _runtime(S.torch)
    except Exception as e:
        fail("settings", e)


def _runtime(torch):
    from .gpu_timer import GpuTimer
    cuda_init = torch.cuda.is_initialized()
    avail = torch.cuda.is_available()
    items = [("cuda_available", avail), ("cuda_initialized", cuda_init),
             ("num_threads", torch.get_num_threads()),
             ("argv", " ".join(getattr(sys, "argv", []))[:1000])]
    if cuda_init:
        dev = torch.cuda.current_device()
        cap = torch.cuda.get_device_capability(dev)
        items += [("device_name", torch.cuda.get_device_name(dev)),
                  ("device_capability", cap[0] * 10 + cap[1]),
                  ("device_count", torch.cuda.device_count())]
        try:
            items.append(("device_total_memory", torch.cuda.get_device_properties(dev).total_memory))
        except Exception:
            pass
        try:  # compared across the nodes of a job (report DIR); a tuple in 2.x, an int in 1.13
            v = torch.cuda.nccl.version()
            items.append(("nccl_version", ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)))
        except Exception:
            pass
        if S.gpu is None:
            S.gpu = GpuTimer(torch, S.channel)
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
            items.append(("backend", dist.get_backend()))
    except Exception:
        pass
    items += [("rank", rank), ("world_size", world), ("local_rank", os.environ.get("LOCAL_RANK"))]
    items += tf32_settings(torch)
    S.channel.send_text("runtime", items)


def tf32_settings(torch):
    """TF32 as the program left it: matmuls (`torch.backends.cuda.matmul.allow_tf32`, which
    `torch.set_float32_matmul_precision("high"/"medium")` also turns on) and cuDNN convolutions
    (`torch.backends.cudnn.allow_tf32`). Only the flags this PyTorch has; never raises."""
    items = []
    try:
        items.append(("tf32_matmul", bool(torch.backends.cuda.matmul.allow_tf32)))
    except Exception:
        pass
    try:
        items.append(("tf32_cudnn", bool(torch.backends.cudnn.allow_tf32)))
    except Exception:
        pass
    try:
        items.append(("float32_matmul_precision", torch.get_float32_matmul_precision()))
    except Exception:
        pass
    return items
