"""Per-step accumulators and the step boundary.

A step ends at the primary optimizer's step (the first optimizer that ever stepped); a loop with
no optimizer falls back to DataLoader fetches (a step = from one fetch to the next). At each
boundary one STEP record is queued (channel.send_step batches them) and the accumulators start
again. end_step runs once per step inside the user's loop: it is kept to plain attribute reads,
one struct pack_into and no allocation beyond the call; RSS is re-read at most every RSS_EVERY_NS.
"""
import math
import os
import time

from . import channel as ch
from .guard import G, check_break, retire

now = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux, the same clock as C++ steady_clock
RSS_EVERY_NS = 10_000_000  # /proc/self/statm costs ~1 us: read it at most every 10 ms


class State:
    __slots__ = (
        # accumulators of the step in progress
        "t_start", "data_ns", "fetches", "h2d_ns", "h2d_n", "h2d_bytes", "h2d_pageable",
        "h2d_blocking", "fwd_ns", "bwd_ns", "opt_ns", "io_ns", "io_n", "item_n", "item_ns",
        "samples", "getitem_ns", "collate_ns", "loss", "loss_seen", "nonfinite", "comm_ns", "comm_n",
        # run-wide
        "step", "opt_seen", "primary_opt", "channel", "statm_fd", "page", "torch",
        "cuda_ready", "gpu", "window", "stop_after", "on_step_hooks", "in_fwd", "fwd_t0",
        "first_fwd_in_step", "stopping", "in_opt", "rss_t", "rss_v")

    def __init__(self):
        self.step = 0
        self.opt_seen = False
        self.primary_opt = None
        self.channel = None
        self.torch = None
        self.cuda_ready = False
        self.gpu = None
        self.window = None
        self.stop_after = 0
        self.on_step_hooks = ()  # add_step_hook / remove_step_hook (a tuple: safe to change mid-loop)
        self.rss_t = 0
        self.rss_v = -1
        self.in_fwd = 0
        self.fwd_t0 = 0
        self.stopping = False
        self.in_opt = 0
        self.t_start = 0
        try:
            self.statm_fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.statm_fd = -1
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.reset()

    def reset(self):
        self.data_ns = self.fetches = 0
        self.h2d_ns = self.h2d_n = self.h2d_bytes = self.h2d_pageable = self.h2d_blocking = 0
        self.fwd_ns = self.bwd_ns = self.opt_ns = self.io_ns = self.io_n = 0
        self.item_n = self.item_ns = 0
        self.samples = self.getitem_ns = self.collate_ns = 0
        self.comm_ns = self.comm_n = 0  # explicit torch.distributed collectives (hooks_dist)
        self.loss = 0.0
        self.loss_seen = False
        self.nonfinite = False
        self.first_fwd_in_step = True

    def touch(self):
        """The first thing the agent sees (a fetch, a forward) starts step 1."""
        if self.t_start == 0:
            self.t_start = now()

    def add_step_hook(self, hook):
        """hook(step) runs at every step boundary until remove_step_hook(hook)."""
        self.on_step_hooks = self.on_step_hooks + (hook,)

    def remove_step_hook(self, hook):
        self.on_step_hooks = tuple(h for h in self.on_step_hooks if h is not hook)

    def rss(self):
        if self.statm_fd < 0:
            return -1
        try:
            return int(os.pread(self.statm_fd, 64, 0).split()[1]) * self.page
        except (OSError, ValueError, IndexError):
            return -1

    def end_step(self, by_optimizer):
        """Closes the step in progress: queues its record, advances the window, maybe stops."""
        if G.break_hook:
            check_break("step", self.step + 1)
        t = now()
        if by_optimizer and not self.opt_seen:
            # The first optimizer step: any fetch-steps before it were warm-up; renumber.
            self.opt_seen = True
            self.step = 0
        self.step = step = self.step + 1
        flags = 1 if by_optimizer else 0  # ch.F_OPTIMIZER
        win = self.window
        if win is not None and win.covers(step):
            flags |= ch.F_PROFILED
        if self.loss_seen:
            flags |= ch.F_LOSS
            if self.nonfinite:
                flags |= ch.F_NONFINITE
            loss = self.loss
        else:
            loss = 0.0
        alloc = reserved = peak = -1
        if not self.cuda_ready:
            torch = self.torch
            # Only once the user has initialised CUDA: we never initialise it ourselves.
            if torch is not None and torch.cuda.is_initialized():
                self.cuda_ready = True
        if self.cuda_ready:
            cuda = self.torch.cuda
            alloc = cuda.memory_allocated()
            reserved = cuda.memory_reserved()
            peak = cuda.max_memory_allocated()
            if self.gpu is not None:
                self.gpu.step_end(step)
        if t - self.rss_t >= RSS_EVERY_NS:
            self.rss_t = t
            self.rss_v = self.rss()
        t_start = self.t_start or t
        self.channel.send_step(
            t, step, flags, t, t - t_start, self.data_ns, self.fetches, self.h2d_ns, self.h2d_n,
            self.h2d_bytes, self.h2d_pageable, self.h2d_blocking, self.fwd_ns, self.bwd_ns,
            self.opt_ns, self.io_ns, self.io_n, self.item_n, self.item_ns, alloc, reserved, peak,
            self.rss_v, self.samples, self.getitem_ns, self.collate_ns, loss, self.comm_ns, self.comm_n)
        if self.channel.dead:
            retire()  # trainscope is gone: nobody reads us, so stop costing anything
            if win is not None:
                win.finish()  # a running profiler would keep recording into the user's memory
        for hook in self.on_step_hooks:
            hook(step)
        self.reset()
        if win is not None:
            win.step_end(step)
        # The window's start/stop/export is not this step's cost: the next step starts now.
        self.t_start = now()
        if self.stop_after and step >= self.stop_after and not self.stopping:
            self.stopping = True
            self.channel.flush()
            from .stop import stop_now
            stop_now(step)

    def see_loss(self, value):
        self.loss = value
        self.loss_seen = True
        if not math.isfinite(value):
            self.nonfinite = True


S = State()
