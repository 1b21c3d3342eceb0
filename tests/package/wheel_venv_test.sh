#!/usr/bin/env bash
# The pip wheel (issue #34) installed the way users install it: a fresh venv gets PyTorch 2.x and
# the wheel scripts/wheel made (package_wheel_build), and from that venv alone (its bin/ first on
# PATH, an empty HOME, a folder outside the checkout) `trainscope doctor`, `trainscope run` on an
# installed example, `trainscope analyze` on a public trace, `python -m trainscope` and
# `trainscope.analyze()` must work; `pip uninstall` must leave the venv's files as they were.
# Expectations come from the sources, not the output: the version from CMakeLists.txt, the
# example's finding from examples/README.md, the trace's from tests/data/expected_findings.tsv.
# PyTorch comes from pip (TRAINSCOPE_WHEEL_TORCH, default torch==2.13.0: 2.x as users have it,
# not Debian's 1.13), so the test needs pip to reach it (a package index or a local wheel folder).
# Usage: wheel_venv_test.sh WHEEL_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
wheel_dir=$1 src=$2 out=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
TORCH=${TRAINSCOPE_WHEEL_TORCH:-torch==2.13.0}

wheels=("$wheel_dir"/trainscope-*.whl)
((${#wheels[@]} == 1)) && [[ -f "${wheels[0]}" ]] || fail "expected one wheel in $wheel_dir, found: ${wheels[*]}"
wheel=${wheels[0]}
version=$(sed -nE 's/^project\(trainscope VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
[[ -n "$version" ]] || fail "no version in $src/CMakeLists.txt"
rm -rf "$out"
mkdir -p "$out"

# A fresh venv (Debian's python3; PyTorch 2.x from pip, not the system's 1.13).
venv="$out/venv"
/usr/bin/python3 -m venv "$venv" || fail "python3 -m venv failed (Debian: python3-venv, scripts/bootstrap installs it)"
"$venv/bin/pip" install -q "$TORCH" >"$out/torch-install.log" 2>&1 ||
  fail "pip install $TORCH into the venv failed: $(tail -3 "$out/torch-install.log")"
# Everything in the venv but Python caches (the running Python may write its own outside trainscope).
files() { (cd "$venv" && find . \( -type f -o -type l \) ! -name '*.pyc' | LC_ALL=C sort); }
files >"$out/before.txt"
"$venv/bin/pip" install -q "$wheel" >"$out/install.log" 2>&1 || fail "pip install $wheel: $(tail -3 "$out/install.log")"

# From the venv only, like an activated one: no TRAINSCOPE_* of the caller's, HOME and cwd elsewhere.
home="$out/home" work="$out/work"
mkdir -p "$home" "$work"
cd "$work"
in_venv() { env -i PATH="$venv/bin:/usr/bin:/bin" HOME="$home" VIRTUAL_ENV="$venv" "$@"; }
[[ "$(in_venv sh -c 'command -v trainscope')" == "$venv/bin/trainscope" ]] || fail "trainscope is not on the venv's PATH"
[[ "$(in_venv trainscope --version)" == *" $version" ]] || fail "trainscope --version is not $version: $(in_venv trainscope --version)"
[[ "$(in_venv python -m trainscope --version)" == *" $version" ]] || fail "python -m trainscope --version is not $version"

# doctor probes the venv's Python (the one `trainscope` runs from) and finds PyTorch 2.x there.
in_venv trainscope doctor --json >doctor.json 2>doctor.err || [[ $? == 1 ]] ||
  fail "doctor crashed: $(tail -3 doctor.err)"
python3 - doctor.json "$venv/bin" <<'PY' || fail "doctor did not probe the venv's PyTorch 2.x: $(head -c 600 doctor.json)"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert os.path.dirname(d["target"]["python"]) == sys.argv[2], d["target"]  # bin/python or bin/python3
assert d["python"]["ran"] and d["python"]["torch_version"].startswith("2."), d["python"]
PY

# run: an example from the installed package, the agent from the installed package.
examples=$(in_venv python -c 'import trainscope; print(trainscope.EXAMPLES)')
[[ "$examples" == "$venv"/lib/python3*/site-packages/trainscope/_bundle/share/trainscope/examples ]] ||
  fail "trainscope.EXAMPLES is not inside the venv: $examples"
expected_run=$(awk -F'|' '$2 ~ /`data_starved.py`/ { gsub(/[ `]/, "", $4); print $4 }' "$src/examples/README.md")
[[ -n "$expected_run" ]] || fail "examples/README.md gives no expected finding for data_starved.py"
in_venv trainscope run --steps 20 --out "$work/run" -- python "$examples/data_starved.py" >run.out 2>run.err ||
  fail "trainscope run exited $?: $(tail -5 run.err)"
python3 - "$work/run/report.json" "$expected_run" <<'PY' || fail "run's report is not what data_starved.py plants"
import json, sys
r = json.load(open(sys.argv[1]))
a = r["run"]["agent"]
assert a["loaded"], "the agent was not loaded from the installed package"
assert a["steps"] == 20, "steps %s (--steps 20)" % a["steps"]
ids = [f["id"] for f in r["findings"]]
assert ids and ids[0] == sys.argv[2], ids
PY

# analyze on a public trace: the command, and the Python API returning the same report as a dict.
trace=tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz
expected=$(awk -F'\t' -v f="$trace" '$1 == f { print $2 }' "$src/tests/data/expected_findings.tsv")
[[ -n "$expected" ]] || fail "tests/data/expected_findings.tsv has no row for $trace"
in_venv trainscope analyze "$src/tests/data/$trace" >analyze.out 2>analyze.err || fail "trainscope analyze: $(tail -3 analyze.err)"
grep -q "$expected" analyze.out || fail "trainscope analyze does not name $expected"
got=$(in_venv python -c "import trainscope; print(trainscope.analyze('$src/tests/data/$trace')['findings'][0]['id'])")
[[ "$got" == "$expected" ]] || fail "trainscope.analyze(...)['findings'][0]['id'] is $got, expected $expected"
# A path it cannot read: a Python exception carrying the binary's one-line error, which names the file.
in_venv python - "$work/no-such-trace.json" <<'PY' || fail "trainscope.analyze on a missing file did not raise TrainscopeError"
import sys, trainscope
try:
    trainscope.analyze(sys.argv[1])
except trainscope.TrainscopeError as e:
    assert sys.argv[1] in str(e) and "\n" not in str(e), repr(e)
    sys.exit(0)
sys.exit(1)
PY

# Uninstall: the venv's files exactly as before the wheel (the agent's and examples' caches too).
"$venv/bin/pip" uninstall -y -q trainscope >"$out/uninstall.log" 2>&1 || fail "pip uninstall: $(tail -3 "$out/uninstall.log")"
files >"$out/after.txt"
diff -u "$out/before.txt" "$out/after.txt" >"$out/left.diff" || fail "pip uninstall left files behind: $(head -20 "$out/left.diff")"
left=$(cd "$venv" && find . -path '*trainscope*' | head -5)
[[ -z "$left" ]] || fail "pip uninstall left $left"
echo "WHEEL VENV OK: $(basename "$wheel"); doctor, run, analyze and trainscope.analyze from a fresh venv; uninstall clean"
