"""The profiler window: torch.profiler over a few steps after warm-up (default 10-14).

Started at the end of step first-1 and stopped at the end of step `last`; each step inside is
wrapped in a `ProfilerStep#N` record_function so the trace engine sees the same steps the agent
numbered. CPU activity always, CUDA when CUDA is in use; shapes and memory recorded. The trace is
exported (Kineto JSON; the bare-array form on builds without Kineto) to <out>/trace.json, or, in
a multi-process job (WORLD_SIZE > 1: every rank profiles the same steps), to
<out>/trace_rank<R>.pt.trace.json, so `trainscope analyze <out>` sees one trace per rank.
A failure here (another profiler already running, an export error) is a note, not an agent error.
"""
import os

from .state import now


def _rank():
    """This process's rank when it is one of several (WORLD_SIZE > 1), else None."""
    env = os.environ
    try:
        if int(env.get("WORLD_SIZE", "1") or 1) > 1 and env.get("RANK", "") != "":
            return int(env["RANK"])
    except ValueError:
        pass
    return None


class Window:
    def __init__(self, torch, channel, first, last, out_dir):
        self.torch = torch
        self.channel = channel
        self.first = max(2, first)
        self.last = max(self.first, last)
        self.out_dir = out_dir
        self.state = "idle"   # idle -> on -> done
        self.prof = None
        self.rf = None
        self.cuda = False

    def covers(self, step):
        # The window's steps, and the one after (the export lands in it).
        return self.first <= step <= self.last + 1

    def step_end(self, step):
        try:
            if self.state == "idle" and step == self.first - 1:
                self._start()
                self._enter(self.first)
            elif self.state == "on":
                self._exit()
                if step >= self.last:
                    self._stop(step)
                else:
                    self._enter(step + 1)
        except Exception as e:
            self._give_up(e)

    def finish(self):
        """At exit (Ctrl-C, --steps, end of script): keep what the window recorded."""
        if self.state == "on":
            try:
                self._exit()
                self._stop(-1)
            except Exception as e:
                self._give_up(e)

    def _start(self):
        torch = self.torch
        P = torch.profiler.ProfilerActivity
        acts = [P.CPU]
        if torch.cuda.is_initialized() and torch.cuda.is_available():
            acts.append(P.CUDA)
            self.cuda = True
        self.prof = torch.profiler.profile(activities=acts, record_shapes=True,
                                           profile_memory=True, with_stack=False)
        self.prof.start()
        self.state = "on"

    def _enter(self, step):
        self.rf = self.torch.autograd.profiler.record_function("ProfilerStep#%d" % step)
        self.rf.__enter__()

    def _exit(self):
        if self.rf is not None:
            rf, self.rf = self.rf, None
            rf.__exit__(None, None, None)

    def _stop(self, step):
        t0 = now()
        self.state = "done"
        prof, self.prof = self.prof, None
        prof.stop()
        rank = _rank()
        name = "trace.json" if rank is None else "trace_rank%d.pt.trace.json" % rank
        path = os.path.join(self.out_dir, name)
        prof.export_chrome_trace(path)
        self.channel.send_text("trace", [
            ("path", path), ("rank", rank), ("first", self.first), ("last", step if step > 0 else -1),
            ("cuda", self.cuda), ("export_ms", (now() - t0) / 1e6)])

    def _give_up(self, e):
        self.state = "done"
        try:
            if self.prof is not None:
                self.prof.stop()
        except Exception:
            pass
        self.prof = None
        self.channel.send_text("note", [("text", "profiler window skipped: %s: %s" % (type(e).__name__, e))])
