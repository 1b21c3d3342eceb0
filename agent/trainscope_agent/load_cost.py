"""Whether loading waits or computes: the CPU time of `__getitem__` + `collate_fn` against their
wall time, in every process that loads (the training process with num_workers=0, else each
worker). Sent as a `load_cpu` text record with running totals (wall_ns, cpu_ns, batches) after
the first batch, every EVERY batches up to LONG, then every LONG batches (a text record costs the
loop ~20 us: with num_workers=0 it is the training process that sends it); trainscope keeps each
process's last one.
Thread CPU time: a worker's other threads (and the main process's pin-memory thread) are not
loading. dataloader-starvation sizes num_workers from the share (docs/FINDINGS.md)."""
import time

from .state import S

EVERY = 16
LONG = 256
thread_ns = time.thread_time_ns


class _Totals:
    wall = 0
    cpu = 0
    batches = 0


def add(wall_ns, cpu_ns):
    t = _Totals
    t.wall += wall_ns
    t.cpu += cpu_ns
    t.batches += 1
    n = t.batches
    if n == 1 or (n % EVERY == 0 and (n <= LONG or n % LONG == 0)):
        S.channel.send_text("load_cpu", [("wall_ns", t.wall), ("cpu_ns", t.cpu), ("batches", t.batches)])
