#!/bin/bash
# worker-restarts' gain against the measured fix (docs/FINDINGS.md, "worker-restarts' gain"): the
# corpus's epoch_workers case (4 epochs of a train and a validation loader, 2 workers each, every
# worker opening a record store) under `trainscope run`, as it is and with
# --set dataloader.persistent_workers=true, interleaved. Prints per pair the finding's predicted
# gain, the measured drop in the waits for starting workers' passes (data wait + evaluation) and in
# the whole run, and at the end the medians and measured / predicted.
# Usage: bench/run/worker_restarts.sh [pairs=5]   (TS=build/bin/trainscope, PY=.venv/bin/python)
# Never a test: timings.
set -u
R=${1:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TS=${TS:-$ROOT/build/bin/trainscope}
PY=${PY:-$ROOT/.venv/bin/python}
CASE=$ROOT/tests/corpus/epoch_workers/train.py
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
echo "$("$PY" -c 'import torch; print("PyTorch", torch.__version__)'), $R pairs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$R"); do
  (cd "$D" && "$TS" run --no-store --no-profile --out "$D/base$i" -- "$PY" "$CASE" >/dev/null 2>&1)
  (cd "$D" && "$TS" run --no-store --no-profile --set dataloader.persistent_workers=true --out "$D/fix$i" -- "$PY" "$CASE" >/dev/null 2>&1)
done
"$PY" - "$D" "$R" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def load(p):
    r = json.load(open(p + "/report.json"))
    t = r["run"]["time_account"]
    g = [e["value"] for f in r["findings"] if f["id"] == "worker-restarts" for e in f["evidence"] if e["name"] == "gain_s"]
    return t, (g[0] if g else 0.0)
pred, waits, runs = [], [], []
for i in range(1, n + 1):
    (b, gain), (f, _) = load(f"{d}/base{i}"), load(f"{d}/fix{i}")
    w = (b["data_wait_s"] + b["eval_s"]) - (f["data_wait_s"] + f["eval_s"])
    run = b["total_s"] - f["total_s"]
    pred.append(gain); waits.append(w); runs.append(run)
    print(f"pair {i}: run {b['total_s']:.2f} -> {f['total_s']:.2f} s; predicted gain {gain:.2f} s, "
          f"measured: waits {w:.2f} s, run {run:.2f} s")
m = statistics.median
print(f"median: predicted {m(pred):.2f} s; measured waits {m(waits):.2f} s ({m(waits) / m(pred):.2f}x), "
      f"run {m(runs):.2f} s ({m(runs) / m(pred):.2f}x the prediction)")
PY
