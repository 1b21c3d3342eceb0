#!/usr/bin/env bash
# A job the kernel's OOM killer ends, for real: `trainscope run` of scripts/keeps_memory_every_step.py in a
# memory cgroup of 900 MiB (cgroup v1's memory hierarchy or v2's, made here and removed after).
# trainscope must exit 137 as the job did, say the OOM killer killed it (report.json exit.cause
# and exit.oom_kills, from /proc/vmstat's oom_kill), and name the growth that filled the memory
# (memory-growth, its title saying the OOM killer ended the job). Registered only where this host
# lets us make a memory cgroup (tests/run/CMakeLists.txt).
# usage: oom_kill_test.sh TRAINSCOPE PYTHON SCRIPT OUT_DIR
set -euo pipefail
ts=$1 py=$2 script=$3 out=$4
limit=$((900 << 20))
if [ -w /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory/trainscope-oom-test-$$
  mkdir "$cg"
  echo "$limit" > "$cg/memory.limit_in_bytes"
  echo 0 > "$cg/memory.swappiness" 2>/dev/null || true
elif grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  cg=/sys/fs/cgroup/trainscope-oom-test-$$
  mkdir "$cg"
  echo "$limit" > "$cg/memory.max"
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
else
  echo "FAIL: no memory cgroup can be made here (registered by mistake)"; exit 1
fi
trap 'rmdir "$cg" 2>/dev/null || true' EXIT
rm -rf "$out"
rc=0
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
  "$ts" run --no-store --no-profile --out "$out" -- "$py" "$script" > "$out.log" 2>&1 || rc=$?
[ "$rc" = 137 ] || { cat "$out.log"; echo "FAIL: trainscope exited $rc, the job's 137 expected"; exit 1; }
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["run"]["exit"]
assert e["signal"] == 9 and e["oom_kills"] >= 1, e
assert "OOM killer" in e["cause"], e["cause"]
f = [f for f in r["findings"] if f["id"] == "memory-growth"]
assert f and "OOM killer" in f[0]["title"], [x["id"] for x in r["findings"]]
per_step = [v["value"] for v in f[0]["evidence"] if v["name"] == "growth_bytes_per_step"][0] / 2**20
assert 16 < per_step < 32, per_step  # 24 MiB a step kept
print("ok: killed by the OOM killer (oom_kills %d), memory-growth %.1f MiB per step" % (e["oom_kills"], per_step))
PY
