"""Makes a CPU-only PyTorch look as if the program had initialised CUDA, with counting fakes,
so that the agent takes the path it takes on a GPU (allocator readings, the GPU timer's events)
and a test can count what that path calls. A stand-in where no GPU is at hand, and said so: the
fakes return plausible values and cost almost nothing, so they show which calls the agent makes
and how often, not what the real calls cost on a GPU (docs/AGENT.md gives both).

install(torch) patches torch.cuda / torch._C in place; CALLS counts every call by name. PyTorch's
memory_stats() family is kept (counted, not replaced): it runs its real Python over a raw
statistics dict of the real size, so a benchmark of an agent that calls it pays what it pays in
Python on a GPU (the C++ side that builds the raw dict is not measured)."""
import collections

CALLS = collections.Counter()

# Calls whose cost grows with the allocator's state: memory_stats() builds the whole dict in
# Python, and the others are built on it (torch/cuda/memory.py).
EXPENSIVE = ("memory_stats", "memory_stats_as_nested_dict", "memory_allocated", "memory_reserved",
             "max_memory_allocated", "max_memory_reserved", "memory_summary")
# Calls into the driver or runtime for the device: never per step.
DEVICE_QUERIES = ("current_device", "device_count", "get_device_properties", "get_device_name",
                  "get_device_capability", "is_available", "synchronize", "_cuda_getDeviceCount",
                  "_cuda_getDevice")


class _Alloc:
    allocated = 512 << 20
    reserved = 1 << 30
    peak = 768 << 20


_STATS = ("allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
          "allocation", "segment", "active", "inactive_split")


def _raw_stats(device):
    """What torch._C._cuda_memoryStats returns on a GPU (the caching allocator's DeviceStats):
    the same keys and nesting (9 statistics x 3 pools x 4 counters, and the scalars), so that
    PyTorch's own memory_stats() walks a dict of the real size when the old path is measured."""
    CALLS["_cuda_memoryStats"] += 1
    out = {}
    for stat in _STATS:
        if stat == "allocated_bytes":
            cur, peak = _Alloc.allocated, _Alloc.peak
        elif stat == "reserved_bytes":
            cur, peak = _Alloc.reserved, _Alloc.reserved
        else:
            cur, peak = 1000, 2000
        out[stat] = {pool: {"current": cur, "peak": peak, "allocated": 10 * peak, "freed": 10 * peak - cur}
                     for pool in ("all", "small_pool", "large_pool")}
    for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
              "max_split_size"):
        out[k] = 0
    out["oversize_allocations"] = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    out["oversize_segments"] = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    return out


class FakeEvent:
    def __init__(self, enable_timing=False, **kwargs):
        CALLS["Event"] += 1

    def record(self, stream=None):
        CALLS["Event.record"] += 1

    def query(self):
        CALLS["Event.query"] += 1
        return True

    def elapsed_time(self, other):
        CALLS["Event.elapsed_time"] += 1
        return 1.0

    def synchronize(self):
        CALLS["Event.synchronize"] += 1


def _counting(name, value):
    def f(*args, **kwargs):
        CALLS[name] += 1
        return value() if callable(value) else value
    f.__name__ = name
    return f


def _counting_real(name, real):
    def f(*args, **kwargs):
        CALLS[name] += 1
        return real(*args, **kwargs)
    f.__name__ = name
    return f


class _Props:
    name = "Fake GPU (tests/run/scripts/fake_cuda.py)"
    total_memory = 80 << 30
    major, minor = 9, 0
    multi_processor_count = 132


def install(torch):
    cuda = torch.cuda
    cuda.is_initialized = lambda: True  # a Python flag in PyTorch: no driver call, not counted
    mem = getattr(cuda, "memory", None)
    if mem is not None and hasattr(mem, "is_initialized"):
        mem.is_initialized = cuda.is_initialized  # memory.py imported its own reference
    cuda.is_current_stream_capturing = _counting("is_current_stream_capturing", False)
    cuda.Event = FakeEvent
    for name in EXPENSIVE:
        real = getattr(cuda, name, None)
        if real is not None:  # PyTorch's own Python, counted: it walks the raw dict as on a GPU
            setattr(cuda, name, _counting_real(name, real))
    values = {"current_device": 0, "device_count": 1, "get_device_properties": _Props(),
              "get_device_name": _Props.name, "get_device_capability": (9, 0), "is_available": True,
              "synchronize": None}
    for name, v in values.items():
        setattr(cuda, name, _counting(name, v))
    C = torch._C
    C._cuda_memoryStats = _raw_stats
    C._cuda_getDeviceCount = _counting("_cuda_getDeviceCount", 1)
    C._cuda_getDevice = _counting("_cuda_getDevice", 0)


def steady(calls_before):
    """The calls made since `calls_before` (a copy of CALLS)."""
    return CALLS - calls_before
