"""trainscope from a wheel: the native binary, its agent and the examples, inside this package.

The command `trainscope` (and `python -m trainscope`) runs the bundled binary with the same
arguments. `analyze(path)` is the notebook entry: the report `trainscope analyze --json` prints,
as a dict. scripts/wheel builds the wheel from the release archive (scripts/package): the
binary, its lib/ and share/trainscope/ keep the archive's layout under _bundle/, so the binary
finds its agent at <bin>/../share/trainscope/agent wherever the environment lives.
"""
import json
import os
import subprocess
import sys

__all__ = ["analyze", "main", "TrainscopeError", "BINARY", "EXAMPLES"]

_BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle")
BINARY = os.path.join(_BUNDLE, "bin", "trainscope")
EXAMPLES = os.path.join(_BUNDLE, "share", "trainscope", "examples")


class TrainscopeError(RuntimeError):
    """The binary refused: the message is its one-line error (it names the file)."""


def _env():
    # doctor and lab probe $TRAINSCOPE_PYTHON first: the interpreter this package is installed
    # in is the one its user trains with (a venv's, not the system's /usr/bin/python3).
    env = dict(os.environ)
    env.setdefault("TRAINSCOPE_PYTHON", sys.executable)
    return env


def analyze(path, *args):
    """Analyze a PyTorch profiler / Kineto trace (or a `trainscope run` folder); returns the
    report `trainscope analyze --json PATH` prints, as a dict (schema in docs/SCHEMA.md).
    Extra command-line options go in *args, e.g. analyze(p, "--top", "3").
    Raises TrainscopeError with the binary's message when it cannot read PATH."""
    cmd = [BINARY, "analyze", "--json", *args, os.fspath(path)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    if r.returncode != 0:
        err = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise TrainscopeError(err[-1] if err else "trainscope analyze exited %d" % r.returncode)
    return json.loads(r.stdout)


def main():
    """The `trainscope` command: replaces this Python process with the binary."""
    os.execve(BINARY, [BINARY] + sys.argv[1:], _env())
