"""Whether loading waits or computes: the CPU time of `__getitem__` + `collate_fn` against the
time it could have run, in every process that loads (the training process with num_workers=0,
else each worker). Sent as a `load_cpu` text record with running totals (wall_ns, cpu_ns,
run_delay_ns, batches) after the first batch, every EVERY batches up to LONG, then every LONG
batches (a text record costs the loop ~20 us: with num_workers=0 it is the training process that
sends it); trainscope keeps each process's last one.
Thread CPU time: a worker's other threads (and the main process's pin-memory thread) are not
loading. Run delay: the time the loading thread was runnable but waited for a core (the kernel's
schedstat, Documentation/scheduler/sched-stats.rst). On a machine other work keeps busy, that
queueing stretches the wall time of loading that computes; counted as waiting it would make the
loading look like storage or network, for which more workers help whatever the cores do. So the
share is cpu / (wall - run_delay), and loading done in the loop itself (num_workers=0) has its
run delay taken out of the loop's data wait (Queued). dataloader-starvation sizes num_workers from
the share (docs/FINDINGS.md)."""
import os
import threading
import time

from .state import S

EVERY = 16
LONG = 256
# Measuring a fetch costs four clock reads, two of them /proc reads: 6-12 us inside a training loop
# on a 2-core VM (a syscall there costs several times what it does in a tight loop), as much again
# as a fetch of a few tens of us (an in-memory batch). So past a process's first EVERY fetches
# (all measured: the first totals sent stand on as many batches as before), one fetch in k is
# measured, k chosen after each measured fetch so that measuring costs at most 1/COST_SHARE of
# the fetches' time, and at most MAX_EVERY. The totals are read as ratios (cpu / (wall - delay),
# delay / wall), which a sample of the fetches estimates; a fetch not measured has no run delay
# taken out of the loop's data wait (Queued): at these lengths a few us, unless the thread lost its
# core inside it.
COST_SHARE = 100
MAX_EVERY = 16


class _Totals:
    wall = 0
    cpu = 0
    delay = 0
    batches = 0


class Queued:
    """The run-queue delay of the fetch in progress when the loop loads itself (num_workers=0):
    hooks_data takes it out of the data wait, which then is the time the loop waited for data."""
    ns = 0


class Every:
    """Which fetches are measured (see COST_SHARE): `left` to skip before the next one; `cost`
    the measuring's usual cost (ns), a running mean in which one reading counts at most 4x the
    mean (a thread that lost its core inside a measurement paid no more to measure)."""
    left = 0
    cost = 0


def due():
    """Whether this fetch is measured; the caller calls measured() after one that is."""
    if Every.left > 0:
        Every.left -= 1
        return False
    return True


def measured(span_ns, cost_ns):
    """After a measured fetch of span_ns whose measuring cost cost_ns: the fetches to skip next."""
    c = Every.cost
    c = Every.cost = c + (min(cost_ns, 4 * c) - c) // 8 if c else cost_ns
    if _Totals.batches < EVERY:
        return
    k = MAX_EVERY if span_ns <= 0 else (COST_SHARE * c) // span_ns + 1
    Every.left = min(k, MAX_EVERY) - 1


class _Sched(threading.local):
    fd = -1     # this thread's schedstat, opened at its first sample (-2: cannot be read)


_sched = _Sched()
_tid = getattr(threading, "get_native_id", None)


def _forgotten():
    """In a forked child (a DataLoader worker) the parent's fd reads the parent's thread: the
    child's sampling thread opens its own (a thread-local set here for the forking thread; other
    threads do not survive a fork)."""
    _sched.fd = -1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forgotten)


def _fallback():
    return time.thread_time_ns(), 0


def sample(end=False):
    """(CPU ns, run-queue delay ns) of the calling thread; `end`: the clock read first, so the CPU
    between a sample() and a sample(end=True) holds neither /proc read. The CPU time is the thread's clock
    (CLOCK_THREAD_CPUTIME_ID), which the kernel brings up to date when read; schedstat's first field
    is only as fresh as the scheduler's last update of the running thread (a tick, a switch), so a
    fetch shorter than a tick that ends before the thread sleeps shows almost no CPU there (measured:
    0.14 of a busy 0.2 ms fetch, 0.61 of a 5 ms one). The run delay, schedstat's second field, is
    settled each time the thread gets a core, so it is current for a thread reading its own.
    /proc/<pid>/task/<tid>/schedstat is read through an fd cached per thread, forgotten in a forked
    child (os.register_at_fork: no getpid/gettid per sample); no delay where it cannot be read."""
    s = _sched
    fd = s.fd
    if fd == -1:  # first sample of this thread (in this process)
        fd = s.fd = _open()
    if fd < 0:
        return _fallback()
    try:
        if end:
            c = time.thread_time_ns()
            return c, int(os.pread(fd, 96, 0).split()[1])
        f = os.pread(fd, 96, 0).split()
        return time.thread_time_ns(), int(f[1])
    except (OSError, ValueError, IndexError):
        s.fd = -2
        return _fallback()


def _open():
    if _tid is None:
        return -2
    try:
        return os.open("/proc/%d/task/%d/schedstat" % (os.getpid(), _tid()), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return -2


def add(wall_ns, cpu_ns, delay_ns=0):
    t = _Totals
    t.wall += wall_ns
    t.cpu += cpu_ns
    t.delay += delay_ns
    t.batches += 1
    n = t.batches
    if n == 1 or (n % EVERY == 0 and (n <= LONG or n % LONG == 0)):
        S.channel.send_text(
            "load_cpu", [("wall_ns", t.wall), ("cpu_ns", t.cpu), ("run_delay_ns", t.delay), ("batches", t.batches)])
