# trainscope agent bootstrap. `trainscope run` puts this directory first on PYTHONPATH, so Python
# imports this file at start-up instead of the installation's own sitecustomize. We start the
# agent (it only arms an import hook: torch is never imported by us), then load the
# sitecustomize that would have run without us, so both run.
import sys as _sys
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))


def _start_agent():
    try:
        if _here not in _sys.path:
            _sys.path.insert(0, _here)
        import trainscope_agent
        trainscope_agent.start()
    except Exception as e:  # never break the user's interpreter
        try:
            _sys.stderr.write("trainscope agent: could not start (%s: %s); running without it\n"
                              % (type(e).__name__, e))
        except Exception:
            pass


def _chain_original():
    # Find the next sitecustomize on sys.path, skipping this directory, and run it as Python
    # would have (errors are printed, not raised, like site.py does).
    import importlib.machinery
    import importlib.util
    paths = [p for p in _sys.path
             if _os.path.abspath(p or ".") != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    this = _sys.modules.get("sitecustomize")
    _sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        _sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n"
                          % (type(e).__name__, e))
    finally:
        if this is not None:
            _sys.modules["sitecustomize"] = this


_start_agent()
try:
    _chain_original()
except Exception as _e:
    try:
        _sys.stderr.write("trainscope agent: could not run the original sitecustomize (%s)\n" % _e)
    except Exception:
        pass
