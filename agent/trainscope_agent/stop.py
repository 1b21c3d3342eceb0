"""--steps N: ending the user's program after step N without harming it.

We raise SystemExit(0) from the optimizer step (or DataLoader fetch) that closed step N, on the
main thread: `finally:` blocks and `with` exits run, `except Exception:` handlers do not catch it,
atexit handlers (ours writes the last records) run, and the exit status is 0. On another thread we
send ourselves SIGINT instead, which the main thread sees as Ctrl-C.
"""
import os
import signal
import sys
import threading

reason = "exit"  # why the program ended, for finish.at_exit: "exit" or "steps"


def stop_now(step):
    global reason
    try:
        sys.stderr.write("trainscope: stopping the program after step %d (--steps)\n" % step)
    except Exception:
        pass
    reason = "steps"
    if threading.current_thread() is threading.main_thread():
        raise SystemExit(0)
    os.kill(os.getpid(), signal.SIGINT)
