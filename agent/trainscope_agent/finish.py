"""At exit (normal end, exception, Ctrl-C, --steps): keep the profiler window, read the last GPU
events (bounded wait: the training is over, so a short wait costs nobody) and say goodbye."""
import importlib.util
import sys

from . import stop
from .guard import G
from .state import S


def at_exit():
    ch = S.channel
    if ch is None or ch.dead:
        return
    try:
        if not G.off:
            S.close_open_step()
        if S.window is not None and not G.off:
            S.window.finish()
        if S.gpu is not None and not G.off:
            S.gpu.drain(1.0)
        if not G.off:
            from . import phases, sites, startup
            phases.send(ch, final=True)  # first: it closes an open evaluation span, charging its line
            sites.send(ch, S.step, final=True)
            startup.stop_and_send(ch)  # no step began: the whole run was start-up
    except Exception as e:
        G.errors.append("at exit: %s: %s" % (type(e).__name__, e))
    torch_found = "torch" in sys.modules
    if not torch_found:
        try:
            torch_found = importlib.util.find_spec("torch") is not None
        except Exception:
            torch_found = False
    ch.send_text("end", [
        ("reason", stop.reason),
        ("uncaught", _uncaught()),
        ("steps", S.step),
        ("torch_imported", "torch" in sys.modules),
        ("torch_hooked", S.torch is not None),  # the agent saw torch's import and hooked it
        ("torch_found", torch_found),
        ("executable", sys.executable),
        ("dropped", ch.dropped),
        ("agent_off", G.off),
    ])


def _uncaught():
    """The uncaught exception's type that is ending the interpreter, or "": Python prints it and
    sets sys.last_value (3.12: also sys.last_exc) before the atexit handlers run. "" means the
    script returned (or called sys.exit): a signal after this record ended the process during
    the interpreter's own teardown (run layer: died_at_exit)."""
    try:
        e = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        return type(e).__name__ if e is not None else ""
    except Exception:
        return ""
