#!/bin/bash
# The agent's own in-process cost per step, without trainscope's process around it: the overhead
# loop with no spin (so every us shows), plain vs with the agent loaded the way `trainscope run`
# loads it (PYTHONPATH, a FIFO; `cat` drains it), optionally vs an older agent directory too,
# interleaved. Each pair runs on the CPU's path and on the GPU's path (CUDA made to look
# initialised: tests/run/scripts/fake_cuda.py). Prints each run's median step, the agent's cost
# in us per step, and that cost as a share of a 3 ms step (an H100 step of the GPU check's mlp).
# Usage: bench/run/agent_cost.sh [repeats=5] [steps=3000] [OLD_AGENT_DIR]
# PY=... picks the interpreter (default: the checkout's .venv, PyTorch 2.x; /usr/bin/python3 is
# Debian's 1.13). CLOSURE=1: the step's forward and backward in step(closure) (Lightning's shape). docs/BENCHMARKS.md, "The agent's cost per step on PyTorch 2.x". Never a test.
set -u
R=${1:-5}; N=${2:-3000}; OLD=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT=$(cd "$HERE/../../agent" && pwd)
PY=${PY:-$HERE/../../.venv/bin/python}
[ -x "$PY" ] || PY=/usr/bin/python3
D=$(mktemp -d); F=$D/agent.fifo; mkfifo "$F"
cat 0<>"$F" >/dev/null 2>&1 & RP=$!
trap 'kill $RP 2>/dev/null; rm -rf "$D"' EXIT
L=$HERE/overhead_loop.py
C=""; [ "${CLOSURE:-0}" = 1 ] && C=--closure
med() { sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p'; }
under() { PYTHONPATH=$1 TRAINSCOPE_AGENT_FIFO=$F TRAINSCOPE_OUT=$D TRAINSCOPE_PROFILE_STEPS=off "$PY" "$L" --spin 0 --steps "$N" $C $2 | med; }
echo "$("$PY" -c 'import torch; print("PyTorch", torch.__version__)'), $N steps per run${C:+, step(closure)}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$R"); do
  for path in cpu gpu; do
    flag=""; [ $path = gpu ] && flag=--fake-cuda
    p=$("$PY" "$L" --spin 0 --steps "$N" $C $flag | med)
    a=$(under "$AGENT" "$flag")
    o=-1; [ -n "$OLD" ] && o=$(under "$OLD" "$flag")
    "$PY" -c "p,a,o=$p,$a,$o; d=(a-p)*1e3; print('%s path: plain %.4f ms  agent %.4f ms  cost %+.1f us/step = %.2f%% of a 3 ms step' % ('$path', p, a, d, d/30) + ('  old agent %.4f ms (%+.1f us)' % (o, (o-p)*1e3) if o > 0 else ''))"
  done
done
