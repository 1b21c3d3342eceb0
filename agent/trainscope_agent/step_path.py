"""The per-step path: what the agent does at every step boundary, and what that may cost.

BUDGET: 30 us per step for everything the agent does in the user's loop (hooks on fetch,
forward, backward, optimizer step, copies, and this boundary): 1% of a 3 ms step on an H100.
bench/run/agent_cost.sh measures it on the CPU path and on the GPU path (CUDA made to look
initialised by counting fakes, tests/run/scripts/fake_cuda.py); docs/AGENT.md has the figures.

Every step, only constant-cost work: attribute reads and adds, one struct pack into the channel's
buffer (channel.send_step), the step hooks still registered (each one-shot hook removes itself),
the profiler window's compare, and with CUDA the GPU timer's two events on the steps it
times (gpu_timer.py: every step up to 16, then one in four on average).

Never per step, because their cost is not bounded or not ours to pay:
  - torch.cuda.memory_stats() and everything built on it (memory_allocated, memory_reserved,
    max_memory_allocated): each call builds the whole statistics dict in Python, about 0.4 ms
    per call on an H100 box (docs/GPU-VALIDATION.md, the H200 profile: 3 calls per step);
  - device queries (current_device, device_count, get_device_properties) and anything that
    synchronises.
Rate-limited, by the clock the step already read:
  - the process RSS (/proc/self/statm, ~1 us), its CPU clock (CLOCK_PROCESS_CPUTIME_ID, one
    syscall: the loop's own CPU per step, which its wall time holds with its waits; the loader
    model counts it for ranks that share a host) and the "has the user initialised CUDA?" check,
    at most every SLOW_EVERY_NS;
  - without CUDA, the C heap's in-use and free bytes (heap.py, one call: ~1 us, more with a long free list) at most
    every SLOW_EVERY_NS and never more than 1% of wall time (HEAP_COST_FACTOR x its cost);
    a step sends them only when read at its end (-1 otherwise), and the RSS it sends again between
    readings is marked by the CPU clock read with it (-1 when not read): the run layer keeps only
    readings for the memory trend, as repeated values would flatten it;
  - the CUDA caching allocator's counters through the raw torch._C._cuda_memoryStats (one C++
    call returning a small nested dict), at most every MEM_EVERY_NS and never more than 1% of
    wall time (100 x its own measured cost). The device index is read once. Steps between
    readings report -1 (no reading); the run layer keeps the readings apart from the step
    sample, so memory growth is still a trend over the whole run, and the peak counter
    (allocated_bytes.all.peak) misses nothing between readings.
"""
import time

from . import channel as ch
from .guard import G, check_break, retire

_cpu_ns = time.process_time_ns

SLOW_EVERY_NS = 10_000_000   # 10 ms: RSS and the CUDA-initialised check
MEM_EVERY_NS = 50_000_000    # 50 ms: the allocator's counters
MEM_COST_FACTOR = 100        # and never more often than 100 x their own cost (<= 1% of wall time)
HEAP_COST_FACTOR = 100       # the C heap's reading likewise (heap.py walks the arenas' free lists)


class CudaMemory:
    """The caching allocator's current/peak allocated and reserved bytes, read through the raw
    binding (the one memory_stats() wraps) and rate-limited (see the module's docstring)."""
    __slots__ = ("fn", "dev", "next_t", "cost_ns", "reads")

    def __init__(self, torch):
        self.fn = getattr(getattr(torch, "_C", None), "_cuda_memoryStats", None)
        self.dev = torch.cuda.current_device() if self.fn is not None else 0  # once, not per step
        self.next_t = 0
        self.cost_ns = 0
        self.reads = 0

    def read(self, t, clock):
        """(allocated, reserved, peak allocated) at time t, or None when not due (or unreadable)."""
        fn = self.fn
        if fn is None or t < self.next_t:
            return None
        t0 = clock()
        try:
            st = fn(self.dev)
            a, r = st["allocated_bytes"]["all"], st["reserved_bytes"]["all"]
            out = (a["current"], r["current"], a["peak"])
        except Exception:
            self.fn = None  # a build without these counters: no memory figures, no retries
            return None
        cost = clock() - t0
        self.cost_ns = cost
        self.reads += 1
        self.next_t = t + max(MEM_EVERY_NS, MEM_COST_FACTOR * cost)
        return out


def end_step(S, level, clock):
    """Closes the step in progress (state.State.end_step): queues its record, advances the
    window, maybe stops the program (--steps)."""
    if G.break_hook:
        check_break("step", S.step + 1)
    t = clock()
    S.step = step = S.step + 1
    flags = S.FLAGS[level]
    final = level == S.OPTIMIZER_LEVEL or not S.opt_waiting
    win = S.window if final else None
    if win is not None and win.covers(step):
        flags |= ch.F_PROFILED
    if S.workers_started:
        flags |= ch.F_WORKERS
    if S.loss_seen:
        flags |= ch.F_LOSS
        if S.nonfinite:
            flags |= ch.F_NONFINITE
        loss = S.loss
        S.prev_loss = (loss, S.nonfinite)
    else:
        loss = 0.0
    alloc = reserved = peak = cpu = heap = heap_free = -1
    if t - S.rss_t >= SLOW_EVERY_NS:
        S.rss_t = t
        S.rss_v = S.rss()
        cpu = _cpu_ns()  # >= 0 marks this step's RSS as read here, not carried over
        if not S.cuda_ready and t >= S.heap_next:
            t1 = clock()
            heap, heap_free = S.heap()
            cost = clock() - t1
            # The cheaper of the last two readings: one the scheduler preempted is not what reading
            # costs (under load one took 100x, and the next came 25 steps later); a free list that
            # really grew shows in both.
            S.heap_next = t + max(SLOW_EVERY_NS, HEAP_COST_FACTOR * min(cost, S.heap_cost))
            S.heap_cost = cost
        if not S.cuda_ready and S.torch is not None:
            _check_cuda(S)
    if S.cuda_ready:
        mem = S.cuda_mem
        if mem is not None:
            m = mem.read(t, clock)
            if m is not None:
                alloc, reserved, peak = m
        if S.gpu is not None:
            S.gpu.step_end(step)  # the forward hooks record its start event under the same flag
    t_start = S.t_start or t
    S.channel.send_step(
        t, step, flags, t, t - t_start, S.data_ns, S.fetches, S.h2d_ns, S.h2d_n,
        S.h2d_bytes, S.h2d_pageable, S.h2d_blocking, S.fwd_ns, S.bwd_ns,
        S.opt_ns, S.io_ns, S.io_n, S.item_n, S.item_ns, alloc, reserved, peak,
        S.rss_v, S.samples, S.getitem_ns, S.collate_ns, loss, S.comm_ns, S.comm_n,
        S.bwd_n, S.opt_n, heap, heap_free, cpu)
    if S.channel.dead:
        retire()  # trainscope is gone: nobody reads us, so stop costing anything
        if S.window is not None:
            S.window.finish()  # a running profiler would keep recording into the user's memory
    for hook in S.on_step_hooks:
        hook(step)
    S.reset()
    if win is not None:
        win.step_end(step)
    # The window's start/stop/export is not this step's cost: the next step starts now.
    S.t_start = clock()
    return step, final


def _check_cuda(S):
    """Once the user has initialised CUDA (we never do it ourselves), start reading the
    allocator. torch.cuda.is_initialized() reads a Python flag: no driver call. Asked until
    it says yes, then never again (an allocator that cannot be read leaves cuda_mem None)."""
    torch = S.torch
    try:
        if not torch.cuda.is_initialized():
            return
    except Exception:
        return
    S.cuda_ready = True
    try:
        S.cuda_mem = CudaMemory(torch)
    except Exception:
        S.cuda_mem = None
