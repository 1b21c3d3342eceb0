#!/usr/bin/env bash
# bench/setup/fresh_clone_times.sh [demo|test|both] [CLONE_DIR]: the README's two commands timed from a
# fresh clone of this checkout's HEAD (git clone: no build tree, no .venv), with the load average and
# the compiler cache's state beside them (docs/BENCHMARKS.md, "Set-up and test times").
# CCACHE_DIR=<empty folder> gives a cold compiler cache; the default is the user's (warm after any
# build of the same sources). TRAINSCOPE_VENV is left to each command: the clone makes its own .venv.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
what=${1:-demo}
dir=${2:-/tmp/trainscope-fresh-clone}
case "$what" in demo|test|both) ;; *) echo "usage: fresh_clone_times.sh [demo|test|both] [CLONE_DIR]" >&2; exit 2 ;; esac
rm -rf "$dir"
git clone -q "$src" "$dir"
cd "$dir"
ccache_state() { command -v ccache >/dev/null && ccache -s 2>/dev/null | grep -iE '^\s*(hits|misses)' | tr -s ' ' | tr '\n' ';' || echo "no ccache"; }
timed() {
  local name=$1; shift
  local load0 t0 t1 rc=0
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s.%N)
  "$@" >"$dir/${name//\//-}.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  printf '%s: %.0f s (exit %d) load average before %s, after %s; commit %s; %s\n' "$name" \
    "$(echo "$t1 - $t0" | bc)" "$rc" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git rev-parse --short HEAD)" "$(nproc) cores"
  return $rc
}
ccache -z >/dev/null 2>&1 || true
if [ "$what" != test ]; then timed scripts/demo scripts/demo; echo "  ccache: $(ccache_state)"; fi
if [ "$what" != demo ]; then timed scripts/test scripts/test; echo "  ccache: $(ccache_state)"; fi
echo "logs: $dir/scripts-*.log"
