"""Host-to-device copies and host syncs, seen from the Python calls that make them.

Each copy and each sync is also counted at its call site, the user's line (sites.hit).
`.cpu()` and `.tolist()` of a CUDA tensor and `torch.cuda.synchronize()` are host syncs too:
counted with `.item()` (a CPU tensor's `.cpu()`/`.tolist()` is not a sync and is not counted).
`Tensor.to` and `Tensor.cuda` are wrapped: when the result is on the GPU and the source was not,
the call was a host-to-device copy; we count it with its bytes, whether the source was pinned
and whether `non_blocking` was asked, and the host time the call took (a blocking or pageable
copy holds the CPU). `Tensor.item` is counted (and its host time, which on a GPU tensor is a
sync). The checks run after the original call and cost a few attribute reads. Under
torch.compile (Dynamo tracing) and on threads other than the loop's the wrappers only call the
original; while a CUDA graph is being captured a copy is not inspected (no CUDA query then).
"""
from . import sites
from .guard import G, fail, patch
from .state import S, now

item_orig = None


def install(torch):
    global item_orig
    T = torch.Tensor
    to_orig = patch(T, "to", None)
    cuda_orig = patch(T, "cuda", None)
    item_orig = patch(T, "item", None)
    cpu_orig = patch(T, "cpu", None)
    tolist_orig = patch(T, "tolist", None)

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
        ns = now() - t0
        S.item_n += 1
        S.item_ns += ns
        sites.hit("item", ns, direct=True)
        return r

    def _sync_wrapper(orig, role):
        def wrapper(self, *args, **kwargs):
            if G.compiling() or G.off or S.in_opt or not self.is_cuda or not S.mine():
                return orig(self, *args, **kwargs)
            t0 = now()
            r = orig(self, *args, **kwargs)
            ns = now() - t0
            S.item_n += 1
            S.item_ns += ns
            sites.hit(role, ns, direct=True)
            return r
        return wrapper

    cpu = _sync_wrapper(cpu_orig, "cpu")
    tolist = _sync_wrapper(tolist_orig, "tolist")
    for w, o in ((to, to_orig), (cuda, cuda_orig), (item, item_orig), (cpu, cpu_orig), (tolist, tolist_orig)):
        w.__doc__ = getattr(o, "__doc__", None)
        w.__wrapped__ = o
    T.to, T.cuda, T.item, T.cpu, T.tolist = to, cuda, item, cpu, tolist
    _install_synchronize(torch)


def _install_synchronize(torch):
    """torch.cuda.synchronize() from the loop: a host sync at the user's line."""
    tc = getattr(torch, "cuda", None)
    if tc is None or not hasattr(tc, "synchronize"):
        return
    sync_orig = patch(tc, "synchronize", None)

    def synchronize(*args, **kwargs):
        if G.compiling() or G.off or S.in_opt or not S.mine():
            return sync_orig(*args, **kwargs)
        t0 = now()
        r = sync_orig(*args, **kwargs)
        ns = now() - t0
        S.item_n += 1
        S.item_ns += ns
        sites.hit("synchronize", ns, direct=True)
        return r

    synchronize.__wrapped__ = sync_orig
    synchronize.__doc__ = getattr(sync_orig, "__doc__", None)
    tc.synchronize = synchronize


def _count(src, dst, ns, non_blocking):
    if _capturing():
        return  # inside CUDA graph capture: no is_pinned() (a CUDA query) on the user's stream
    S.h2d_n += 1
    S.h2d_ns += ns
    nbytes = src.numel() * src.element_size()
    S.h2d_bytes += nbytes
    pinned = False
    try:
        pinned = src.is_pinned()
    except Exception:
        pass
    if not pinned:
        S.h2d_pageable += 1
    blocking = not (non_blocking and pinned)
    if blocking:
        # A copy from pageable memory blocks the host whatever non_blocking says.
        S.h2d_blocking += 1
    sites.hit("h2d", ns, nbytes, 0 if pinned else 1, 1 if blocking else 0, 3)


def _capturing():
    torch = S.torch
    f = getattr(getattr(torch, "cuda", None), "is_current_stream_capturing", None)
    try:
        return bool(f()) if f is not None else False
    except RuntimeError:  # a build without CUDA's capture API (its dummy raises): no capture here
        return False
