"""GPU time per step from CUDA events, never synchronising.

An event is recorded on the current stream when the step's first forward starts and another
when the step ends (the optimizer step returned). Each step end polls the oldest pending pair
with `query()`; once the end event has completed, `elapsed_time` gives the GPU time of that step
(from the start of its forward to the end of its optimizer step, idle gaps inside included) and a
GPU record is written. Events are reused; at most 64 pairs wait, older ones are dropped.
While the current stream is capturing a CUDA graph (`torch.cuda.graph`, torch.compile's
"reduce-overhead" mode) nothing is recorded or queried: an event query during capture is an
illegal call that would invalidate the user's capture. The step is then simply not timed.

Every step is timed up to step FIRST_STEPS, then one step in four on average, at gaps drawn at
random from GAP (an own generator: the user's random state is never touched), so no period of the
loop (every other step, every fourth) is always in or always out of the sample. What the run layer
takes from these records is a median over the steps that have one (src/run/agent_summary.cpp), which
a sample estimates; the per-step cost on a GPU's path (two event records through
torch.cuda.Event.record, the capture test, a query, a record queued) falls by the same four
(docs/AGENT.md, "The per-step budget"). A step not timed reports no GPU time (null in report.json).
"""
import collections
import random
import time


MAX_PENDING = 64
FIRST_STEPS = 16  # every step timed until then: a short run, and the warm-up, keep all of theirs
GAP = (2, 6)      # then the next timed step is 2-6 steps on (uniform: 4 on average)


class GpuTimer:
    def __init__(self, torch, channel):
        self.torch = torch
        self.channel = channel
        self.pending = collections.deque()
        self.pool = []
        self.start_ev = None
        f = getattr(torch.cuda, "is_current_stream_capturing", None)
        self.capturing = f if f is not None else (lambda: False)
        self.timed = True     # the step in progress is one of the sample
        self.next_timed = 0   # the next step to time
        self.rng = random.Random(0x7453)

    def _event(self):
        if self.pool:
            return self.pool.pop()
        return self.torch.cuda.Event(enable_timing=True)

    def forward_start(self):
        if not self.timed or self.capturing():
            return
        ev = self._event()
        ev.record()
        self.start_ev = ev

    def step_end(self, step):
        if not self.timed:
            # (step < FIRST_STEPS: a better step marker took over and counts from 1 again)
            self.timed = step + 1 >= self.next_timed or step < FIRST_STEPS
            return
        if self.capturing():
            self.start_ev = None  # a pair straddling the capture's start is not a step's time
            return
        if self.start_ev is not None:
            end = self._event()
            end.record()
            self.pending.append((step, self.start_ev, end))
            self.start_ev = None
            if len(self.pending) > MAX_PENDING:
                self.pending.popleft()
            # A step without a forward seen (start_ev None) leaves the next one timed instead.
            self.next_timed = step + 1 if step < FIRST_STEPS else step + self.rng.randint(*GAP)
            self.timed = step + 1 >= self.next_timed
        self.poll()

    def poll(self):
        while self.pending:
            step, a, b = self.pending[0]
            if not b.query():
                return
            self.pending.popleft()
            ms = a.elapsed_time(b)
            self.channel.send_gpu(time.perf_counter_ns(), step, int(ms * 1e6))
            self.pool.append(a)
            self.pool.append(b)

    def drain(self, timeout_s):
        """At exit only: wait (polling, bounded) for the last events."""
        deadline = time.monotonic() + timeout_s
        if self.capturing():
            return
        while self.pending and time.monotonic() < deadline:
            self.poll()
            if self.pending:
                time.sleep(0.005)
