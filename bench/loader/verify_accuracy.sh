#!/usr/bin/env bash
# bench/loader/verify_accuracy.sh [RUNS] [PYTHON] [EXAMPLE ARG]: how close `trainscope verify`'s
# measured gain comes to its prediction, RUNS times (default 5), each with the load average beside
# it: by default on the demo's example (examples/data_starved.py 400, --steps 200); EXAMPLE
# cpu_bound_loader.py 300 gives the loading that computes (no gain predicted on a quiet machine). This ratio moves with other work on the
# cores (docs/BENCHMARKS.md), so it is measured here, never bounded in a test
# (tests/cli/verify_cli_test.cpp asserts the sleep-bound outcome instead: at least 2x).
# PYTHON defaults to the checkout's .venv (PyTorch 2.x); TS to build/prefix/bin/trainscope.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-5}
py=${2:-$root/.venv/bin/python}
example=${3:-data_starved.py} arg=${4:-400}
ts=${TS:-$root/build/prefix/bin/trainscope}
[ -x "$ts" ] || { echo "verify_accuracy: $ts: no trainscope binary (scripts/build)" >&2; exit 1; }
"$py" -c 'import torch' 2>/dev/null || { echo "verify_accuracy: $py does not import torch" >&2; exit 1; }
home=$(mktemp -d /tmp/ts-verify-bench-XXXXXX)
trap 'rm -rf "$home"' EXIT
echo "$example $arg, $("$py" -c 'import torch; print("PyTorch", torch.__version__)'), $(nproc) cores"
echo "run  load1  baseline_ms  predicted  measured  measured/predicted"
for i in $(seq 1 "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  (cd "$home" && TRAINSCOPE_HOME="$home" "$ts" verify --json --steps 200 -- "$py" "$root/examples/$example" "$arg" \
    >"$home/v.json" 2>"$home/v.err") || { echo "verify_accuracy: run $i failed: $(tail -3 "$home/v.err")" >&2; exit 1; }
  python3 - "$home/v.json" "$i" "$load" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = next(x for x in d["fixes"] if x["finding"] == "dataloader-starvation")
p, m = f["predicted_speedup"], f["measured_speedup"]
print("%3s  %5s  %11.2f  %8.2fx  %7.2fx  %18.2f" % (sys.argv[2], sys.argv[3], d["baseline"]["step_ms"], p, m, m / p))
PY
done
