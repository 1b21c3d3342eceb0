"""Runs a function right after a module's own code has executed, without importing anything on the
user's behalf: torch (the agent's hooks, __init__.py) and the frameworks' configuration classes
(frameworks.py).

A meta-path finder, first in sys.meta_path, answers only for the watched names: it asks the other
finders for the real spec and wraps its loader, whose exec_module runs the module and then the
function. The finder answers every time it is asked until the module has really executed, and only
then leaves: libraries probe before they import (`importlib.util.find_spec("torch")` in
datasets.config, transformers' and accelerate's `is_torch_available`), and a probe asks the finders
without loading anything. A finder that left at the first question never saw the import that
followed: Hugging Face's run_clm.py imports datasets before torch, and the agent saw no step.
"""
import sys
import threading


def watch(calls):
    """calls: {module name: fn(module)}. A module already imported gets its call now; the others
    when they have been imported."""
    pending = {}
    for name, fn in calls.items():
        mod = sys.modules.get(name)
        if mod is not None:
            fn(mod)
        else:
            pending[name] = fn
    if pending:
        sys.meta_path.insert(0, _Finder(pending))


class _Finder:
    def __init__(self, pending):
        self.pending = pending
        self.asking = threading.local()  # names this thread is resolving (a finder that asks back)

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending:
            return None
        asking = getattr(self.asking, "names", None)
        if asking is None:
            asking = self.asking.names = set()
        if name in asking:
            return None
        asking.add(name)
        try:
            spec = _real_spec(self, name, path, target)
        finally:
            asking.discard(name)
        if spec is None or spec.loader is None or isinstance(spec.loader, _Loader):
            return spec
        spec.loader = _Loader(spec.loader, self, name)
        return spec

    def executed(self, name, module):
        fn = self.pending.pop(name, None)
        if not self.pending:
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
        if fn is not None:
            fn(module)


def _real_spec(me, name, path, target):
    """What the import system would find without us: the next finder that answers."""
    for finder in list(sys.meta_path):
        if finder is me:
            continue
        fs = getattr(finder, "find_spec", None)
        if fs is None:
            continue
        try:
            spec = fs(name, path, target)
        except Exception:
            continue
        if spec is not None:
            return spec
    return None


class _Loader:
    def __init__(self, loader, finder, name):
        self._loader = loader
        self._finder = finder
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:  # the module's own loader from now on (reload, pickling, importlib.resources)
            module.__spec__.loader = self._loader
            module.__loader__ = self._loader
        except Exception:
            pass
        self._loader.exec_module(module)  # raises as it would without us: still watched, then
        self._finder.executed(self._name, module)

    def __getattr__(self, name):
        return getattr(self._loader, name)
