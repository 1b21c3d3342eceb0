#!/bin/bash
# The agent's own in-process cost per step, without trainscope's process around it: the overhead
# loop with no spin (~120 us steps on the build VM, so every us shows), plain vs with the agent
# loaded the way `trainscope run` loads it (PYTHONPATH, a FIFO; `cat` drains it), optionally vs an
# older agent directory too, interleaved. Prints each run's median step and the deltas.
# Usage: bench/run/agent_cost.sh [repeats=5] [steps=3000] [OLD_AGENT_DIR]
# (docs/BENCHMARKS.md, "Cutting the agent's per-step cost"). Timings only: never a test.
set -u
R=${1:-5}; N=${2:-3000}; OLD=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT=$(cd "$HERE/../../agent" && pwd)
PY=/usr/bin/python3
D=$(mktemp -d); F=$D/agent.fifo; mkfifo "$F"
cat 0<>"$F" >/dev/null 2>&1 & RP=$!
trap 'kill $RP 2>/dev/null; rm -rf "$D"' EXIT
L=$HERE/overhead_loop.py
med() { sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p'; }
under() { PYTHONPATH=$1 TRAINSCOPE_AGENT_FIFO=$F TRAINSCOPE_OUT=$D TRAINSCOPE_PROFILE_STEPS=off $PY "$L" --spin 0 --steps "$N" | med; }
for i in $(seq "$R"); do
  p=$($PY "$L" --spin 0 --steps "$N" | med)
  a=$(under "$AGENT")
  o=-1; [ -n "$OLD" ] && o=$(under "$OLD")
  $PY -c "p,a,o=$p,$a,$o; print('plain %.4f ms  agent %.4f ms (%+.1f us)' % (p, a, (a-p)*1e3) + ('  old agent %.4f ms (%+.1f us)' % (o, (o-p)*1e3) if o > 0 else ''))"
done
