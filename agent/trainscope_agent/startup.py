"""Where the time before the first step goes (docs/AGENT.md, "Time account"): a sampling profile
of the main thread from the agent's start until the first step begins.

A daemon thread wakes every INTERVAL, takes the main thread's frame (sys._current_frames()) and
charges the time since its previous sample to what it sees: an import in progress (a `<frozen
importlib._bootstrap>` frame: the libraries loading) or else the innermost frame of the user's own
code (sites.user_frame: data preparation, model building). Time-weighted, not counted: while an
import holds the GIL in C the sampler wakes late, and counting samples would charge that time to
whatever comes next. It never touches the main thread's objects, stops at the first step (or after
MAX_SAMPLES), and sends one `startup` record: samples, the profiled ns, import ns and the top user
lines with their ns. Cost: ~20 us of GIL per sample, 0.2% of the start-up at 10 ms.

The thread imports nothing: what it needs is imported on the main thread before it starts. An
import in a second thread while the user's script imports torch can meet it halfway (torch ->
platform -> re while the thread's linecache -> tokenize -> re runs): Python's import lock then
breaks the cycle by handing one side a module still being initialised ("module 're' has no
attribute 'compile'" in `import torch`, seen on Debian's Python 3.11 on a loaded host).
"""
import sys
import threading
import time

INTERVAL = 0.01
MAX_SAMPLES = 60000   # 10 minutes at 10 ms
TOP = 5


class St:
    done = False
    sent = False
    samples = 0
    profiled = 0      # ns between the first and the last sample
    imports = 0       # ns of it with an import in progress
    lines = {}        # (file, line, func) -> ns
    thread = None


def start():
    try:
        from . import sites  # here, on the main thread: the sampler's thread must import nothing
        St.thread = threading.Thread(target=_run, args=(sites.user_frame,), name="trainscope-startup", daemon=True)
        St.thread.start()
    except Exception:
        St.done = True


def _run(user):
    try:
        main = threading.main_thread().ident
        frames = sys._current_frames
        lines = St.lines
        clock = time.perf_counter_ns
        last = clock()
        while not St.done and St.samples < MAX_SAMPLES:
            time.sleep(INTERVAL)
            if St.done:
                break
            f = frames().get(main)
            if f is None:
                break
            t = clock()
            dt, last = t - last, t
            St.samples += 1
            St.profiled += dt
            g, n, importing = f, 0, False
            while g is not None and n < 64:
                if g.f_code.co_filename.startswith("<frozen importlib"):
                    importing = True
                    break
                g = g.f_back
                n += 1
            if importing:
                St.imports += dt  # the libraries loading: not a line of the user's to change
            else:
                u = user(f)
                if u is not None:
                    key = (u.f_code.co_filename, u.f_lineno, u.f_code.co_name)
                    lines[key] = lines.get(key, 0) + dt
                u = None
            f = g = None
    except Exception:
        pass
    St.done = True


def stop_and_send(channel):
    """At the first step (phases.first_step_start) or at exit: the profile goes out once."""
    St.done = True
    if St.sent or channel is None or St.samples == 0:
        return
    St.sent = True
    import os
    from .sites import _source_line
    top = sorted(St.lines.items(), key=lambda kv: -kv[1])[:TOP]
    f = [("samples", St.samples), ("interval_ms", INTERVAL * 1e3), ("profiled_ns", St.profiled),
         ("import_ns", St.imports)]
    for i, ((file, line, func), ns) in enumerate(top):
        f += [("file%d" % i, os.path.abspath(file)), ("line%d" % i, line), ("func%d" % i, func), ("ns%d" % i, ns),
              ("text%d" % i, _source_line(file, line))]
    channel.send_text("startup", f)
