"""The profiler window: torch.profiler over a few steps after warm-up (default 10-14).

Started at the end of step first-1 and stopped at the end of step `last`; each step inside is
wrapped in a `ProfilerStep#N` record_function so the trace engine sees the same steps the agent
numbered. CPU activity always, CUDA when CUDA is in use; shapes and memory recorded. With CUDA, on
PyTorch >= 2.1, Kineto's CUDA sync events are recorded too (`cat: cuda_sync`: each stream, event and
device synchronisation, the GPU-side evidence of a host sync; see `sync_events_config`). The trace is
exported (Kineto JSON; the bare-array form on builds without Kineto) to <out>/trace.json (other
processes without a rank, Hogwild's trainers, to trace_pid<PID>.json), or, in a multi-process job
(every rank profiles the same steps), to <out>/trace_rank<R>.pt.trace.json,
so `trainscope analyze <out>` sees one trace per rank. The rank is torch.distributed's once the
process group exists (mp.spawn, Lightning and accelerate need not set RANK), else RANK.
A failure here (an export error) is a note, not an agent error.

The window's memory is bounded. Until the export, every recorded event lives in this process
(Kineto's buffers, then the result tree `prof.stop()` builds from them and the export: the peak
came to 4-6x the recording, docs/BENCHMARKS.md session 45), and a step can
hold millions of operators: pytorch/examples' time_sequence_prediction (LBFGS, 20 closures a step,
each an LSTMCell loop over 999 time steps) records ~350 MiB per closure and was killed by the
kernel's OOM killer at 24 GiB inside a 2-step window. So the window stops early once what the
process holds has grown `budget` beyond what it held at the window's start: at a step's end, and
mid step (the model's forward and backward calls) beyond that plus how far the step before the
window rose at those calls and its end (a step's activations come and go; the program's first step,
when it is the one before the window, allocates the optimizer's state at its end, and its first
forward call comes before the model is hooked: its rise is its highest read less its lowest).
What it holds is its RSS less the bytes glibc's heap keeps free (heap.py):
on the CPU the recording's small blocks, allocated between a step's large activations, keep the
freed space from being reused whole, and the heap grows by about a step's activations per
recorded step while the recording itself takes under 1 MiB (pytorch/examples' dcgan: +274 MiB
inside its second recorded step of 3,347 events; docs/BENCHMARKS.md session 50). That freed
space is reusable and is not multiplied by the export, so it is bounded apart, by a quarter of the
memory available at the window's start (`rss_cap`). Both are checked at every step end and, mid
step, at the model's forward and backward calls (`guard`, rate-limited), so a step is cut between
two of its forward/backward calls; a note says where and why, and the trace record names the step
it cut (`cut_step`) so that step, partial, is left out of the trace's step times.

The user's profiler comes first: when one is already running at the window's start, or the
program starts one (torch.profiler.profile / torch.autograd.profiler.profile, patched to tell
us), the window does not open, or closes at once without exporting, before theirs starts.
"""
import os

from . import phases
from .guard import patch
from .state import S, now


def _trace_path(out_dir, rank):
    """Where this process's window goes. A rank's name is its own; processes without one (trainers
    started with multiprocessing.Process, as Hogwild's are) profile the same steps at once, and two
    exports into one trace.json interleave into a file no reader takes. The first to claim
    trace.json (O_EXCL) keeps it; the others write trace_pid<PID>.json."""
    if rank is not None:
        return os.path.join(out_dir, "trace_rank%d.pt.trace.json" % rank)
    path = os.path.join(out_dir, "trace.json")
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        path = os.path.join(out_dir, "trace_pid%d.json" % os.getpid())
    return path


def _rank():
    """This process's rank when it is one of several, else None."""
    try:
        dist = getattr(S.torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            if dist.get_world_size() > 1:
                return int(dist.get_rank())
            return None
    except Exception:
        pass
    env = os.environ
    try:
        if int(env.get("WORLD_SIZE", "1") or 1) > 1 and env.get("RANK", "") != "":
            return int(env["RANK"])
    except ValueError:
        pass
    return None


def sync_events_config(torch):
    """The profiler's experimental config that records CUDA sync events, or None where this PyTorch
    has none. `enable_cuda_sync_events` arrived in PyTorch 2.1 (torch._C._profiler._ExperimentalConfig);
    on older builds the keyword is unknown and the constructor raises TypeError, so the window runs
    without it. TRAINSCOPE_CUDA_SYNC_EVENTS=0 turns it off."""
    if os.environ.get("TRAINSCOPE_CUDA_SYNC_EVENTS", "1") == "0":
        return None
    cfg = getattr(getattr(getattr(torch, "_C", None), "_profiler", None), "_ExperimentalConfig", None)
    if cfg is None:
        return None
    try:
        return cfg(enable_cuda_sync_events=True)
    except Exception:  # TypeError: a PyTorch before 2.1
        return None


WINDOW_MIB = 256            # the trace's default memory budget (TRAINSCOPE_WINDOW_MIB overrides)
GUARD_EVERY_NS = 10_000_000  # mid-step RSS reads at most every 10 ms


def _budgets():
    """(The window's memory budget, its cap on the RSS), shared by the ranks on this host
    (torchrun's LOCAL_WORLD_SIZE, mp.spawn's nprocs: every rank profiles the same steps).
    The budget is WINDOW_MIB, at most a sixteenth of the memory available at the window's start
    (recording, the stop's result tree and the export together peaked at 4-6x the recording); the
    cap, on the heap's freed space that the RSS carries too, is a quarter of it, at least the
    budget."""
    mib = WINDOW_MIB
    try:
        mib = max(16, int(os.environ.get("TRAINSCOPE_WINDOW_MIB", mib)))
    except ValueError:
        pass
    budget = cap = mib << 20
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    share = int(line.split()[1]) * 1024 // _local_ranks()
                    budget = min(budget, max(16 << 20, share // 16))
                    cap = max(budget, share // 4)
                    break
    except (OSError, ValueError, IndexError):
        pass
    return budget, cap


LOCAL_PROCS_ENV = "TRAINSCOPE_LOCAL_PROCS"  # set for its children by a process that mp.spawns ranks


def _local_ranks():
    """The processes on this host that profile the same steps: torchrun's LOCAL_WORLD_SIZE, or the
    nprocs of the torch.multiprocessing.spawn that started this rank (spawned_ranks_share)."""
    n = 1
    for name in ("LOCAL_WORLD_SIZE", LOCAL_PROCS_ENV):
        try:
            n = max(n, int(os.environ.get(name, "1") or 1))
        except ValueError:
            pass
    return n


def spawned_ranks_share(torch):
    """torch.multiprocessing.spawn (and start_processes, which it calls) sets no LOCAL_WORLD_SIZE,
    yet its nprocs ranks profile the same steps at once on this host: the launching process puts
    nprocs into its environment, which the spawned interpreters inherit, so each rank's window
    takes its share of the budget (_budgets). `torch.multiprocessing.spawn` is the function;
    its module is reached through sys.modules."""
    import sys
    owners = [sys.modules.get("torch.multiprocessing.spawn"), getattr(torch, "multiprocessing", None)]
    for owner in owners:
        if owner is not None and callable(getattr(owner, "start_processes", None)) \
                and not hasattr(owner.start_processes, "__wrapped__"):
            _wrap_start_processes(owner)


def _wrap_start_processes(owner):
    original = patch(owner, "start_processes", None)

    def start_processes(*args, **kwargs):
        try:
            nprocs = int(kwargs["nprocs"] if "nprocs" in kwargs else (args[2] if len(args) > 2 else 1))
            if nprocs > 1:
                os.environ[LOCAL_PROCS_ENV] = str(nprocs)
        except Exception:
            pass
        return original(*args, **kwargs)
    start_processes.__wrapped__ = original
    start_processes.__name__ = "start_processes"
    setattr(owner, "start_processes", start_processes)


def _peak_rss_bytes():
    """The process's peak RSS so far (getrusage: KiB on Linux), at least its current one."""
    try:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except Exception:
        peak = 0
    return max(peak, S.rss())


def _held_bytes():
    """What the process holds: its RSS less the bytes glibc's heap keeps free (resident, and
    reused by the next allocations that fit), or the RSS where the heap cannot say (heap.py)."""
    rss = S.rss()
    if rss <= 0:
        return rss
    free = S.heap()[1]
    return rss - free if free > 0 else rss


class _Ours:
    starting = False   # our own window is starting its profiler (not the user's)
    user = False       # the program started a profiler of its own


def watch_user_profilers(torch):
    """Patches the profilers' entry points so a profiler the program starts closes our window
    first (two profilers cannot run at once: theirs would fail)."""
    targets = []
    prof_mod = getattr(torch, "profiler", None)
    if prof_mod is not None:
        for name in ("profile", "_KinetoProfile"):
            cls = getattr(prof_mod, name, None) or getattr(getattr(prof_mod, "profiler", None), name, None)
            if isinstance(cls, type) and "start" in cls.__dict__:
                targets.append((cls, "start"))
    legacy = getattr(getattr(torch.autograd, "profiler", None), "profile", None)
    if isinstance(legacy, type) and "__enter__" in legacy.__dict__:
        targets.append((legacy, "__enter__"))
    for cls, name in targets:
        _wrap_start(cls, name)


def _wrap_start(cls, name):
    original = patch(cls, name, None)

    def start(self, *args, **kwargs):
        if not _Ours.starting:
            _user_profiler_starts()
        return original(self, *args, **kwargs)
    start.__wrapped__ = original
    start.__name__ = name
    setattr(cls, name, start)


def _user_profiler_starts():
    try:
        if not _Ours.user:
            _Ours.user = True
            win = S.window
            if win is not None:
                win.yield_to_user()
    except Exception:
        pass


class Window:
    def __init__(self, torch, channel, first, last, out_dir):
        self.torch = torch
        self.channel = channel
        self.first = max(2, first)
        self.last = max(self.first, last)
        self.out_dir = out_dir
        self.state = "idle"   # idle -> learn (the step before the window) -> on -> done
        self.prof = None
        self.rf = None
        self.cuda = False
        self.sync_events = False  # CUDA sync events asked of Kineto (sync_events_config)
        self.entered = 0          # the step being recorded
        self.floor = 0            # what the process held at the window's start (bytes)
        self.rise = 0             # how far it rose inside the step before: its highest read less its lowest
        self.lo = self.hi = -1    # what it held, lowest and highest, in the step before (bytes; -1: unread)
        self.budget = 0           # the growth beyond them that stops the window (bytes)
        self.rss_floor = 0        # the RSS's peak before the window (bytes)
        self.rss_cap = 0          # the RSS's growth beyond it that stops the window (bytes)
        self.next_check = 0
        if self.first == 2:
            self._learn(first_step=True)  # the step before the window is the program's first

    def covers(self, step):
        # The window's steps, and the one after (the export lands in it).
        return self.first <= step <= self.last + 1

    def step_end(self, step):
        if self.state == "done" or (self.state == "idle" and not self.first - 2 <= step <= self.first - 1):
            return  # every step outside the window: three compares
        t0 = now()
        try:
            if self.state != "on" and step == self.first - 1:
                if _Ours.user or self._other_profiler_running():
                    self._skip("the program runs its own profiler")
                    return
                self.floor = _held_bytes()
                if self.state == "learn":
                    self._learnt(self.floor)
                    self.rise = self.hi - self.lo
                self._start()
                self._enter(self.first)
            elif self.state == "idle":
                self._learn()  # step first-2 ended
            elif self.state == "learn":
                self.state = "idle"  # past the window's first step without starting it
                S.window_on = False
            elif self.state == "on":
                self._exit()
                if step >= self.last:
                    self._stop(step)
                else:
                    why, grown = self._over_budget(0)
                    if why:
                        self._cut(why, grown, step)
                    else:
                        self._enter(step + 1)
        except Exception as e:
            self._give_up(e)
        finally:
            phases.profiled(now() - t0)  # between two steps: our time, not the loop's (phases.py)

    def _learn(self, first_step=False):
        """The step before the window: how far what the process holds rises at its forward and
        backward calls and its end above its lowest (from the previous step's end; the program's
        first step from its own reads, since start-up is not a step), the activations that the
        window's mid-step reads allow for (guard)."""
        self.state = "learn"
        self.lo = self.hi = -1
        if not first_step:
            self._learnt(_held_bytes())
        S.window_on = True

    def _learnt(self, held):
        if held > 0:
            self.lo = held if self.lo < 0 else min(self.lo, held)
            self.hi = max(self.hi, held)

    def guard(self):
        """Mid-step (the model's forward and backward calls, while S.window_on): in the step before
        the window, learns its rise; in the window, stops it inside the step over its budget. The
        stop and export are the window's time, not the step's: the step's start moves past them."""
        if self.state == "learn":
            self._learnt(_held_bytes())  # every call: one step's
            return
        t0 = now()
        if t0 < self.next_check or self.state != "on":
            return
        self.next_check = t0 + GUARD_EVERY_NS
        why, grown = self._over_budget(self.rise)
        if not why:
            return
        step = self.entered
        try:
            self._exit()
            self._cut(why, grown, step - 1, cut_step=step)
        except Exception as e:
            self._give_up(e)
        dt = now() - t0
        phases.profiled(dt)
        if S.t_start:
            S.t_start += dt

    def _over_budget(self, rise):
        """(Why the window must stop now, how far it grew past its floor in bytes), or (None, 0):
        its events ("events"), or the heap's freed space that the recording keeps from being
        reused ("rss"). `rise`: what the step's own tensors may hold at this point (mid step, the
        step before's rise; 0 at a step's end)."""
        held = _held_bytes()
        if held > 0 and held - self.floor - rise > self.budget:
            return "events", held - self.floor - rise
        rss = S.rss()
        if rss > 0 and rss - self.rss_floor > self.rss_cap:
            return "rss", rss - self.rss_floor
        return None, 0

    def _cut(self, why, grown, last_whole, cut_step=None):
        """Stops the window after step `last_whole`, at a step's end, or inside `cut_step` (its
        record already exited), `why` and `grown` being _over_budget's: a note says where and why.
        covers() then ends at the step the export lands in."""
        if cut_step is None:
            where = "after step %d" % last_whole
        elif last_whole < self.first:
            where = "inside its first step, %d (the trace holds part of it)" % cut_step
        else:
            whole = last_whole - self.first + 1
            where = "inside step %d, after %d whole step%s" % (cut_step, whole, "" if whole == 1 else "s")
        if why == "events":
            text = ("profiler window stopped %s: its events had grown the process by %.0f MiB (the budget: %d MiB, "
                    "TRAINSCOPE_WINDOW_MIB): a step of this program records many operators" %
                    (where, grown / 2**20, self.budget >> 20))
        else:
            text = ("profiler window stopped %s: the process had grown by %.0f MiB (the cap: %d MiB, a quarter of "
                    "the memory available), most of it freed memory that the C heap keeps while the recording's "
                    "small blocks sit between the step's large ones" %
                    (where, grown / 2**20, self.rss_cap >> 20))
        self.channel.send_text("note", [("text", text)])
        self.last = last_whole
        self._stop(last_whole if last_whole >= self.first else -1, cut_step=cut_step)

    def finish(self):
        """At exit (Ctrl-C, --steps, end of script): keep what the window recorded."""
        if self.state == "on":
            t0 = now()
            try:
                self._exit()
                self._stop(-1)
            except Exception as e:
                self._give_up(e)
            phases.profiled(now() - t0)

    def _other_profiler_running(self):
        f = getattr(self.torch.autograd, "_profiler_enabled", None)
        try:
            return bool(f()) if f is not None else False
        except Exception:
            return False

    def _skip(self, why):
        self.state = "done"
        S.window_on = False
        self.channel.send_text("note", [("text", "profiler window skipped: %s" % why)])

    def yield_to_user(self):
        """The program starts its own profiler: close ours (nothing exported) before it does."""
        if self.state == "on":
            self.state = "done"
            S.window_on = False
            try:
                self._exit()
                prof, self.prof = self.prof, None
                prof.stop()
            except Exception:
                pass
            self.channel.send_text("note", [("text", "profiler window closed early: the program started its own profiler")])
        elif self.state == "idle":
            self._skip("the program runs its own profiler")

    def _start(self):
        torch = self.torch
        P = torch.profiler.ProfilerActivity
        acts = [P.CPU]
        extra = {}
        if torch.cuda.is_initialized() and torch.cuda.is_available():
            acts.append(P.CUDA)
            self.cuda = True
            cfg = sync_events_config(torch)
            if cfg is not None:
                extra["experimental_config"] = cfg
                self.sync_events = True
        # The allocator's [memory] events are read for CUDA only (src/analysis/memory.cpp): on a
        # CPU-only run they would be a record per allocation and free, never read, and c10's
        # "Memory block of unknown size was allocated before the profiling started" in the job's
        # stderr.
        self.prof = torch.profiler.profile(activities=acts, record_shapes=True,
                                           profile_memory=self.cuda, with_stack=False, **extra)
        _Ours.starting = True
        try:
            self.prof.start()
        finally:
            _Ours.starting = False
        self.state = "on"
        self.rss_floor = _peak_rss_bytes()
        self.budget, self.rss_cap = _budgets()
        S.window_on = True

    def _enter(self, step):
        self.entered = step
        self.rf = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % step)
        self.rf.__enter__()

    def _exit(self):
        if self.rf is not None:
            rf, self.rf = self.rf, None
            rf.__exit__(None, None, None)

    def _stop(self, step, cut_step=None):
        t0 = now()
        self.state = "done"
        S.window_on = False
        prof, self.prof = self.prof, None
        prof.stop()
        rank = _rank()
        path = _trace_path(self.out_dir, rank)
        prof.export_chrome_trace(path)
        self.channel.send_text("trace", [
            ("path", path), ("rank", rank), ("first", self.first), ("last", step if step > 0 else -1),
            ("cuda", self.cuda), ("sync_events", self.sync_events), ("export_ms", (now() - t0) / 1e6),
            ("cut_step", cut_step)])

    def _give_up(self, e):
        self.state = "done"
        S.window_on = False
        try:
            if self.prof is not None:
                self.prof.stop()
        except Exception:
            pass
        self.prof = None
        self.channel.send_text("note", [("text", "profiler window skipped: %s: %s" % (type(e).__name__, e))])
