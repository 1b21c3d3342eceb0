"""The agent's start-up sampler (trainscope_agent/startup.py) runs in a thread of its own while the
user's script imports torch; an import made in that thread can meet the script's halfway, and
Python's import lock then hands one side a module still being initialised (`import torch` failed
with "module 're' has no attribute 'compile'" under `trainscope run` of an mp.spawn job on a loaded
host). This starts the sampler as the agent does and records, with a meta-path finder installed
first, every import asked for in any thread but the main one while it samples (the agent's own
modules not yet loaded, so that an import it makes in the thread is seen). Prints one line per
check and "THREAD IMPORTS OK"; exits 1 on the first failure."""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))

MAIN = threading.get_ident()
OTHERS = []


class Recorder:
    """Sees every import that reaches the finders; finds nothing itself."""

    def find_spec(self, name, path=None, target=None):
        if threading.get_ident() != MAIN:
            OTHERS.append(name)
        return None


sys.meta_path.insert(0, Recorder())
# The modules the sampler uses, dropped so that a lazy import of them would reach the finders.
for name in [m for m in sys.modules if m.startswith("trainscope_agent")] + ["linecache", "tokenize", "sysconfig"]:
    sys.modules.pop(name, None)

from trainscope_agent import startup  # noqa: E402

startup.start()
if startup.St.thread is None:
    print("FAIL the sampler did not start")
    sys.exit(1)
deadline = time.time() + 5
while startup.St.samples < 5 and time.time() < deadline:
    time.sleep(0.01)
startup.St.done = True
startup.St.thread.join(5)
print("sampler took %d samples" % startup.St.samples)
if startup.St.samples < 5:
    print("FAIL the sampler took %d samples in 5 s" % startup.St.samples)
    sys.exit(1)
if OTHERS:
    print("FAIL the sampler's thread imported: %s" % ", ".join(sorted(set(OTHERS))))
    sys.exit(1)
print("no import outside the main thread")
print("THREAD IMPORTS OK")
