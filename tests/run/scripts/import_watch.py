"""The agent's import watch (trainscope_agent/import_watch.py) on real modules written to a temporary
folder: the call comes once, right after the module's own code ran, never from a probe
(importlib.util.find_spec asks the finders and loads nothing: datasets and transformers probe torch
before importing it); a module that fails to execute keeps its watch for the retry; a module
already imported is called at once; the finder leaves once every watched module has run; a finder
that asks the import system back for the same name does not recurse. Prints one line per check and
"IMPORT WATCH OK"; exits 1 on the first failure."""
import importlib
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))

from trainscope_agent import import_watch  # noqa: E402

tmp = tempfile.mkdtemp(prefix="ts-import-watch-")
sys.path.insert(0, tmp)
with open(os.path.join(tmp, "tsw_plain.py"), "w") as f:
    f.write("RAN = True\nVALUE = 41\n")
with open(os.path.join(tmp, "tsw_fails.py"), "w") as f:
    f.write("import os\nif not os.environ.get('TSW_OK'):\n    raise RuntimeError('first try fails')\nVALUE = 7\n")

calls = []


def seen(mod):
    calls.append((mod.__name__, getattr(mod, "VALUE", None)))


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        sys.exit(1)


import_watch.watch({"tsw_plain": seen, "tsw_fails": seen, "os": seen})
check(calls == [("os", None)], "a module already imported is called at once: %r" % calls)
finders = [f for f in sys.meta_path if isinstance(f, import_watch._Finder)]
check(len(finders) == 1, "one finder for the modules not yet imported")

for _ in range(3):
    spec = importlib.util.find_spec("tsw_plain")
    check(spec is not None and "tsw_plain" not in sys.modules, "a probe finds the module and loads nothing")
check(len(calls) == 1, "no call from the probes")

import tsw_plain  # noqa: E402

check(calls[-1] == ("tsw_plain", 41), "called once, after the module's code ran: %r" % calls)
check(tsw_plain.__loader__ is not None and not isinstance(tsw_plain.__loader__, import_watch._Loader),
      "the module keeps its own loader")
importlib.reload(tsw_plain)
check(len(calls) == 2, "a reload is not an import: no second call")

try:
    import tsw_fails  # noqa: F401
    check(False, "the failing module raised")
except RuntimeError as e:
    check(str(e) == "first try fails", "the module's own error comes through unchanged")
check(len(calls) == 2 and finders[0] in sys.meta_path, "a failed execution keeps the watch")
os.environ["TSW_OK"] = "1"
import tsw_fails  # noqa: E402,F811

check(calls[-1] == ("tsw_fails", 7), "the retry that runs is called: %r" % calls)
check(finders[0] not in sys.meta_path, "the finder left once every watched module ran")


class AsksBack:
    """A finder of the kind some packages install, that resolves a name through importlib (guarded
    against itself, as such finders are, but not against the watch)."""
    busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "tsw_loop" or self.busy:
            return None
        self.busy = True
        try:
            return importlib.util.find_spec(name)
        finally:
            self.busy = False


with open(os.path.join(tmp, "tsw_loop.py"), "w") as f:
    f.write("VALUE = 3\n")
sys.meta_path.insert(0, AsksBack())
import_watch.watch({"tsw_loop": seen})
spec = importlib.util.find_spec("tsw_loop")
check(spec is not None and isinstance(spec.loader, import_watch._Loader)
      and not isinstance(spec.loader._loader, import_watch._Loader),
      "a finder that asks back: one wrapped loader, no recursion")
import tsw_loop  # noqa: E402,F401

check(calls[-1] == ("tsw_loop", 3) and len(calls) == 4, "and one call: %r" % calls)
print("IMPORT WATCH OK")
