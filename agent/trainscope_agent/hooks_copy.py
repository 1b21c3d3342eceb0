"""Host-to-device copies and host syncs, seen from the Python calls that make them.

`Tensor.to` and `Tensor.cuda` are wrapped: when the result is on the GPU and the source was not,
the call was a host-to-device copy; we count it with its bytes, whether the source was pinned
and whether `non_blocking` was asked, and the host time the call took (a blocking or pageable
copy holds the CPU). `Tensor.item` is counted (and its host time, which on a GPU tensor is a
sync). The checks run after the original call and cost a few attribute reads. Under
torch.compile (Dynamo tracing) and on threads other than the loop's the wrappers only call the
original; while a CUDA graph is being captured a copy is not inspected (no CUDA query then).
"""
from .guard import G, fail, patch
from .state import S, now

item_orig = None


def install(torch):
    global item_orig
    T = torch.Tensor
    to_orig = patch(T, "to", None)
    cuda_orig = patch(T, "cuda", None)
    item_orig = patch(T, "item", None)

    def to(self, *args, **kwargs):
        if G.compiling() or G.off or self.is_cuda or not S.mine():
            return to_orig(self, *args, **kwargs)
        t0 = now()
        r = to_orig(self, *args, **kwargs)
        if r is not self and getattr(r, "is_cuda", False):
            try:
                nb = kwargs.get("non_blocking")
                if nb is None:
                    nb = any(a is True for a in args)
                _count(self, r, now() - t0, bool(nb))
            except Exception as e:
                fail("Tensor.to", e)
        return r

    def cuda(self, *args, **kwargs):
        if G.compiling() or G.off or self.is_cuda or not S.mine():
            return cuda_orig(self, *args, **kwargs)
        t0 = now()
        r = cuda_orig(self, *args, **kwargs)
        try:
            nb = kwargs.get("non_blocking")
            if nb is None:
                nb = len(args) > 1 and args[1] is True
            _count(self, r, now() - t0, bool(nb))
        except Exception as e:
            fail("Tensor.cuda", e)
        return r

    def item(self):
        # optimizers call .item() internally: not the user's sync
        if G.compiling() or G.off or S.in_opt or not S.mine():
            return item_orig(self)
        t0 = now()
        r = item_orig(self)
        S.item_n += 1
        S.item_ns += now() - t0
        return r

    for w, o in ((to, to_orig), (cuda, cuda_orig), (item, item_orig)):
        w.__doc__ = getattr(o, "__doc__", None)
        w.__wrapped__ = o
    T.to, T.cuda, T.item = to, cuda, item


def _count(src, dst, ns, non_blocking):
    if _capturing():
        return  # inside CUDA graph capture: no is_pinned() (a CUDA query) on the user's stream
    S.h2d_n += 1
    S.h2d_ns += ns
    S.h2d_bytes += src.numel() * src.element_size()
    pinned = False
    try:
        pinned = src.is_pinned()
    except Exception:
        pass
    if not pinned:
        S.h2d_pageable += 1
    if not (non_blocking and pinned):
        # A copy from pageable memory blocks the host whatever non_blocking says.
        S.h2d_blocking += 1


def _capturing():
    torch = S.torch
    f = getattr(getattr(torch, "cuda", None), "is_current_stream_capturing", None)
    try:
        return bool(f()) if f is not None else False
    except RuntimeError:  # a build without CUDA's capture API (its dummy raises): no capture here
        return False
