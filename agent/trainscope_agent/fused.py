"""Whether fused=True optimizers run on the parameters' device: PyTorch's own list of the devices
with fused optimizer kernels (torch.utils._foreach_utils._get_fused_kernels_supported_devices:
CUDA, and the CPU from 2.4, whose fused Adam/AdamW/SGD/Adagrad make one pass over each
parameter's memory), CUDA alone where the list is missing (1.13)."""


def devices():
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
        return set(_get_fused_kernels_supported_devices())
    except Exception:
        return {"cuda"}


def runs_on(tensors):
    """True when every tensor is on a device with fused optimizer kernels."""
    if not tensors:
        return False
    have = devices()
    return all(getattr(getattr(t, "device", None), "type", None) in have for t in tensors)
