"""Bytes the C heap has handed out (glibc's mallinfo2: in-use arena chunks plus mmapped chunks),
and the bytes it holds free (fordblks: freed chunks and the arenas' top, still mapped).

Why not only the RSS: on the CPU, PyTorch's tensors come from malloc (c10's alloc_cpu,
posix_memalign), and memory that is freed stays resident (glibc rarely returns it to the kernel).
Leaked tensors first reuse the pages that earlier frees left (the profiler window's, a cache
emptied) and the RSS stays flat for as long as they last: examples/growing_memory.py keeps 4 MiB
a step, and its RSS stood still for its last 5-8 steps of 40 in 4 runs of 6 beside two busy
loops, while the heap's in-use bytes rose by 4 MiB at every step.

Read with the RSS (step_path.SLOW_EVERY_NS, rate-limited by its own cost): mallinfo2 walks each
arena's free lists, about 1.2 us a call in a PyTorch process here (2,000 calls timed beside 1.9 us
for the statm read, 2026-11-28), more with a long free list. Only where it means something:
glibc >= 2.33 (mallinfo2: size_t fields; the older mallinfo's ints wrap at 2 GiB) and no other
allocator preloaded (jemalloc, tcmalloc, mimalloc answer malloc themselves and leave glibc's
counters still). Elsewhere -1 (no reading):
the run layer falls back to the RSS. Python's own small objects (pymalloc arenas, mmapped
directly) are not in it: the run layer tests the RSS's trend too (docs/FINDINGS.md, memory-growth).
That test takes the RSS less the heap's free bytes: glibc keeps what is freed resident and grows
its arena when a large block outgrows the free space (after a large free, the mmap threshold rises
and the next blocks of that size come from the arena), so a loop that writes an 8 MB checkpoint
every step (examples/checkpoint_every_step.py) saw its RSS rise 12.7 MiB over 27 steps while the
heap in use stood still. Both figures come from the same call: no extra cost.
"""
import os

_PRELOADED = ("jemalloc", "tcmalloc", "mimalloc", "hoard", "scudo")


def reader():
    """A function returning (the heap's in-use bytes, its free bytes), or None where that reading
    is not the program's memory (see the module's docstring)."""
    try:
        if any(p in os.environ.get("LD_PRELOAD", "") for p in _PRELOADED):
            return None
        ver = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
        if not ver or not ver.startswith("glibc "):
            return None
        major, minor = (int(x) for x in ver.split()[1].split(".")[:2])
        if (major, minor) < (2, 33):
            return None
        import ctypes

        class MallInfo2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]

        fn = ctypes.CDLL(None).mallinfo2
        fn.restype = MallInfo2
        fn.argtypes = ()

        def read():
            m = fn()
            return m.uordblks + m.hblkhd, m.fordblks

        return read if read()[0] > 0 else None
    except Exception:
        return None
