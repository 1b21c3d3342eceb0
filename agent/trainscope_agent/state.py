"""Per-step accumulators and the step boundary: which event of the user's loop ends a step.

The loop is found from four markers, best first (docs/AGENT.md, "What a step is"):
  OPTIMIZER  an optimizer's step() returned (one per loop iteration: the primary optimizer's)
  BACKWARD   torch.autograd.backward returned, outside optimizer.step() (manual SGD)
  FETCH      a DataLoader fetch starts (a loop over a DataLoader with no backward)
  FORWARD    the model's top-level forward starts (pre-batched inference)
The first marker seen starts the count; a better marker seen later takes over and the steps are
numbered again from 1 (the earlier records keep their own kind and the run layer uses the best
kind a process reported). While an optimizer exists that has not stepped yet, a weaker marker
is provisional: it neither stops the program (--steps) nor moves the profiler window, so
gradient accumulation (K backward before the first optimizer step) cannot stop it early.

Accumulators belong to the loop thread (the thread whose marker events end steps): hooks called
from other threads (DataParallel replicas, a checkpoint thread, a logging thread) are not the
loop's time and are skipped, so no accumulator is ever written by two threads. At each boundary
one STEP record is queued (channel.send_step batches them) by step_path.end_step, the budgeted
per-step path (its docstring gives the budget and what never runs per step).
"""
import math
import os
import time
from _thread import get_ident

from . import channel as ch
from .step_path import end_step as _end_step
from .stop import stop_now

now = time.perf_counter_ns  # CLOCK_MONOTONIC on Linux, the same clock as C++ steady_clock

# Markers, weakest first (the value orders them).
FORWARD, FETCH, BACKWARD, OPTIMIZER = 1, 2, 3, 4
SOURCE_NAMES = {FORWARD: "forward", FETCH: "dataloader", BACKWARD: "backward", OPTIMIZER: "optimizer"}
_FLAGS = {FORWARD: ch.F_FORWARD, FETCH: 0, BACKWARD: ch.F_BACKWARD, OPTIMIZER: ch.F_OPTIMIZER}


class State:
    FLAGS = _FLAGS           # read by step_path.end_step
    OPTIMIZER_LEVEL = OPTIMIZER
    __slots__ = (
        # accumulators of the step in progress
        "t_start", "data_ns", "fetches", "h2d_ns", "h2d_n", "h2d_bytes", "h2d_pageable",
        "h2d_blocking", "fwd_ns", "bwd_ns", "opt_ns", "io_ns", "io_n", "item_n", "item_ns",
        "samples", "getitem_ns", "collate_ns", "loss", "loss_seen", "nonfinite", "comm_ns", "comm_n",
        "bwd_n", "opt_n", "started", "workers_started",
        # run-wide
        "step", "source", "tid", "opt_waiting", "channel", "statm_fd", "page", "torch",
        "cuda_ready", "cuda_mem", "gpu", "window", "window_on", "stop_after", "on_step_hooks", "fwd_t0",
        "first_fwd_in_step", "stopping", "stop_pending", "first_kind", "in_opt", "rss_t", "rss_v",
        "heap_fn", "heap_cost", "heap_next", "graph_capture", "graph_has_opt", "first_t",
        "prev_loss", "closure_ns")

    def __init__(self):
        self.step = 0
        self.source = 0          # the marker that ends steps now (0: none seen yet)
        self.tid = None          # the loop thread (set by the first marker event)
        self.opt_waiting = ()    # optimizers built that have not stepped yet (a WeakSet, hooks_model)
        self.channel = None
        self.torch = None
        self.cuda_ready = False
        self.cuda_mem = None     # step_path.CudaMemory once the user initialised CUDA
        self.gpu = None
        self.window = None
        self.window_on = False   # the profiler window is recording (its mid-step guard runs)
        self.stop_after = 0
        self.on_step_hooks = ()  # add_step_hook / remove_step_hook (a tuple: safe to change mid-loop)
        self.rss_t = 0
        self.rss_v = -1
        self.heap_fn = False     # heap.reader() at the first reading (False: not asked yet)
        self.heap_cost = 0       # the last reading's cost (ns); 0: the first (which sets the reader up) waits least
        self.heap_next = 0
        self.fwd_t0 = 0
        self.stopping = False
        self.stop_pending = False  # --steps reached at an end marker: stop at the loop's next start
        self.first_kind = 0        # the marker kind of the very first event: how an iteration starts
        self.in_opt = 0
        self.closure_ns = 0         # time inside optimizer.step(closure)'s closure calls, run-wide (hooks_model)
        self.graph_capture = False  # a CUDA graph capture is running (hooks_graph): record nothing
        self.graph_has_opt = False  # ... and an optimizer step was captured in it
        self.t_start = 0
        self.first_t = 0            # the first step's start (phases.py: the time before it)
        self.prev_loss = None       # (loss, nonfinite) of the last step that read one: _take_over
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
        self.bwd_n = self.opt_n = 0     # backward calls outside optimizer.step(), optimizer steps
        self.started = False            # a start marker (fetch, forward) opened this step
        self.workers_started = False    # a fetch in this step waited for DataLoader workers to start
        self.loss = 0.0
        self.loss_seen = False
        self.nonfinite = False
        self.first_fwd_in_step = True

    def mine(self):
        """True on the loop thread (or before any marker chose one): accumulate here only."""
        tid = self.tid
        return tid is None or tid == get_ident()

    def owns(self, level):
        """mine(), or an event of a marker better than the current one (it takes the loop over)."""
        tid = self.tid
        return tid is None or tid == get_ident() or level > self.source

    def touch(self):
        """The first thing the agent sees (a fetch, a forward) starts step 1."""
        if self.t_start == 0:
            self.begin(now())

    def begin(self, t):
        """A step starts with nothing open before it; the very first one: phases.py's totals."""
        self.t_start = t
        if not self.first_t:
            self.first_t = t
            from . import phases
            phases.first_step_start(t)

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

    def heap(self):
        """(The C heap's in-use bytes, its free bytes) (heap.py), -1s where it cannot say."""
        fn = self.heap_fn
        if fn is False:
            from . import heap
            fn = self.heap_fn = heap.reader()
        if fn is None:
            return -1, -1
        try:
            return fn()
        except Exception:
            self.heap_fn = None
            return -1, -1

    # ------------------------------------------------------------ markers

    def _counts(self, level):
        """Whether a marker of this level, on the calling thread, marks the loop's steps: a
        weaker marker than the one counting never does; a better one takes over (from this
        thread); the same one counts only on the thread it was first seen on."""
        source = self.source
        if level < source:
            return False
        tid = get_ident()
        if level > source:
            self._take_over(level, tid)
            return True
        return tid == self.tid  # the same marker on another thread: not the loop's

    def mark_end(self, level):
        """An end marker (optimizer step, backward) returned: it ends the step in progress."""
        if self._counts(level):
            self.end_step(level)

    def mark_start(self, level):
        """A start marker (fetch, forward) begins: it ends the step it started last time."""
        if not self._counts(level):
            return
        if self.started:
            self.end_step(level)
        else:
            # The first step, or the first after an epoch ended (the DataLoader ran out): what
            # happened in between (validation, a checkpoint) is no step's time.
            self.reset()
            self.begin(now())
        self.started = True

    def close_open_step(self):
        """At exit: a step a start marker opened (the last forward of an inference loop, a loop
        that broke out of its DataLoader) ends here. Never stops the program."""
        if self.started and (self.source == FORWARD or self.source == FETCH) and not self.stopping:
            self.stop_after = 0
            self.end_step(self.source)

    def loader_worker(self):
        """This process is a DataLoader worker: none of its events are the loop's. A transform
        that is an nn.Module (torchvision's Normalize, v2's transforms) runs its forward here once
        per sample, and a worker forked before the loop's first backward would count those as
        steps (pytorch/examples mnist_rnn with num_workers=1: 25,727 "steps" of 0.3 ms). No level
        reaches this source and no thread has ident 0, so every marker and mine() says no."""
        self.source = 1 << 30
        self.tid = 0
        self.started = False

    def _take_over(self, level, tid):
        # A better marker than any so far: steps are counted by it from now on, from 1.
        self.source = level
        self.tid = tid
        self.step = 0
        # Its step 1 is the one the weaker marker just closed: in a plain loop the backward ended
        # step 1 (and took its loss) before the first optimizer step took over. The loss goes with
        # it, or a loss NaN from the start counted 9 of 10 steps.
        if not self.loss_seen and self.prev_loss is not None:
            self.loss, self.nonfinite = self.prev_loss
            self.loss_seen = True

    def final(self):
        """Steps counted now are the loop's for good: no optimizer is waiting to take over."""
        return self.source == OPTIMIZER or not self.opt_waiting

    def end_step(self, level):
        """Closes the step in progress (step_path.end_step, the budgeted per-step path), then
        stops the program when --steps is reached."""
        step, final = _end_step(self, level, now)
        if final and self.stop_after and step >= self.stop_after and not self.stopping:
            self.stopping = True
            self.channel.flush()
            if level == OPTIMIZER or level == BACKWARD:
                # The step ended inside the iteration (a GAN's first optimizer, a manual update
                # after backward): let the rest of it run (the user's counter, scheduler, logging)
                # and stop where the next iteration starts: at the next event of the kind the
                # loop started with (its fetch, its forward), or at the latest before the next
                # step's own marker (the hooks call stop_at()).
                self.stop_pending = True
            else:
                self.stop()  # a fetch or forward starts the next iteration: stop before it

    def stop_at(self, kind, marker=False):
        """Called by a hook at an event of `kind` while a stop is pending; `marker`: this event
        is the step marker itself (the primary optimizer's step, a backward)."""
        if kind == self.first_kind or marker:
            self.stop()

    def stop(self):
        """--steps: end the program now (SystemExit on the loop thread, stop.py)."""
        self.stop_pending = False
        stop_now(self.step)

    def see_loss(self, value):
        self.loss = value
        self.loss_seen = True
        if not math.isfinite(value):
            self.nonfinite = True


S = State()
