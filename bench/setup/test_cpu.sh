#!/usr/bin/env bash
# bench/setup/test_cpu.sh [BUILD_DIR] [JOBS] [CTEST_ARGS...]: the suite under ctest with BSD process accounting on
# (Debian's `acct`; root), then each test's CPU against its wall time and the cores left idle
# (bench/setup/test_cpu.py; docs/BENCHMARKS.md, "Set-up and test times", session 44). Never a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
jobs=${2:-$(nproc)}
shift $(( $# < 2 ? $# : 2 ))
command -v accton >/dev/null || { echo "test_cpu.sh: accton not found (apt-get install acct)" >&2; exit 2; }
d=$(mktemp -d); touch "$d/pacct"
trap 'accton off >/dev/null 2>&1 || true' EXIT
accton "$d/pacct" >/dev/null
echo "load average before $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
TRAINSCOPE_FAIL_ON_SKIP=1 ctest --test-dir "$build" -j"$jobs" --output-junit "$d/junit.xml" "$@" >"$d/ctest.log" 2>&1 || rc=$?
accton off >/dev/null
grep -E "tests passed|tests failed" "$d/ctest.log" || true
echo "ctest exit $rc; log $d/ctest.log"
python3 "$here/test_cpu.py" "$d/pacct" "$d/junit.xml" "$build" "$jobs"
