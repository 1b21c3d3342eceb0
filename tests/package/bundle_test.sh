#!/usr/bin/env bash
# The release archive (issue #15) unpacked into a fresh temporary folder: its layout, its size, a
# stripped binary whose every non-glibc library ldd resolves inside the bundle, a minimum glibc that
# matches the binary's own symbol versions, and `analyze` + `run` working under `env -i` (nothing of
# the build host's environment, no PATH, no HOME) with the agent found next to the binary.
# Usage: bundle_test.sh DIST_DIR SOURCE_DIR
set -euo pipefail
dist=$1 src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
archives=("$dist"/trainscope-*-linux-x86_64.tar.gz)
((${#archives[@]} == 1)) && [[ -f "${archives[0]}" ]] || fail "expected one archive in $dist, found: ${archives[*]}"
archive=${archives[0]}
size=$(stat -c %s "$archive")
((size <= 25 * 1024 * 1024)) || fail "$archive is $size bytes, over 25 MiB"

tmp=$(mktemp -d /tmp/ts-bundle-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$archive" -C "$tmp"
b=$(echo "$tmp"/trainscope-*)
[[ -d "$b" ]] || fail "the archive has no trainscope-<version>-linux-x86_64/ folder"
for f in bin/trainscope README.md scripts/gpu-check share/trainscope/BUILDINFO \
         share/trainscope/agent/sitecustomize.py share/trainscope/agent/trainscope_agent/__init__.py \
         share/trainscope/agent/trainscope_lab/__init__.py share/trainscope/examples/healthy.py \
         share/trainscope/examples/lab/tiny_convnet.py share/trainscope/examples/ddp/train_ddp_gloo.py \
         share/trainscope/gpu_check/gpu_check.py share/trainscope/gpu_check/torch2_case.py; do
  [[ -e "$b/$f" ]] || fail "the bundle lacks $f"
done
[[ -z "$(find "$b" -name '__pycache__' -o -name '*.pyc')" ]] || fail "the bundle carries Python caches"

# Stripped: no symbol table, no debug sections; the run path is the bundle's lib/.
sections=$(readelf -S -W "$b/bin/trainscope")
grep -q '\.symtab' <<<"$sections" && fail "bin/trainscope is not stripped (.symtab present)"
grep -q '\.debug_' <<<"$sections" && fail "bin/trainscope has debug sections"
readelf -d "$b/bin/trainscope" | grep -E 'R(UN)?PATH' | grep -qF '[$ORIGIN/../lib]' || fail "run path is not \$ORIGIN/../lib"
# Nothing of this checkout is baked in (the source-tree fallbacks are off in the portable build).
! grep -qaF "$src" "$b/bin/trainscope" || fail "bin/trainscope names the source tree $src"

# Every library outside glibc resolves inside the bundle.
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libmvec)\.so'
out=$(ldd "$b/bin/trainscope")
grep -q 'not found' <<<"$out" && fail "unresolved libraries: $out"
while read -r so arrow path _; do
  [[ "$arrow" == "=>" ]] || continue
  [[ "$so" =~ $glibc ]] && continue
  [[ "$(realpath -m "$path")" == "$(realpath "$b")/lib/"* ]] || fail "$so resolves outside the bundle: $path"
done <<<"$out"
# Static where Debian ships the archive (sqlite, ncurses, tinfo, zlib, libstdc++, libgcc), and no
# C++ library shared at all: a shared libstdc++ would raise the minimum glibc to the build host's.
grep -Eq 'libsqlite3|libncurses|libtinfo|libz\.so|libstdc\+\+|libgcc_s|libfmt|libsimdjson' <<<"$out" &&
  fail "a library that must be linked in is shared: $out"

# The minimum glibc written in BUILDINFO is the newest GLIBC_ version any shipped ELF asks for.
want=$(for f in "$b/bin/trainscope" "$b"/lib/*; do objdump -T "$f"; done | grep -o 'GLIBC_[0-9.]*' |
  sed 's/GLIBC_//' | sort -V | tail -1)
grep -qx "min_glibc: $want" "$b/share/trainscope/BUILDINFO" || fail "BUILDINFO min_glibc is not $want"
# (That README's stated minimum is at least this: glibc_floor_test.sh.)

# analyze on a fixture, from an unrelated folder, with an empty environment.
cd "$tmp"
env -i "$b/bin/trainscope" analyze --json \
  "$src/tests/data/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz" >analyze.json 2>analyze.err ||
  fail "analyze under env -i: $(cat analyze.err)"
grep -q '"schema": "trainscope.report/2"' analyze.json || fail "analyze printed no report"
# TensorBoard's num_workers=0 ResNet-50 trace: the DataLoader dominates the step (its tutorial's point).
grep -q '"id": "dataloader-starvation"' analyze.json || fail "analyze did not find the starved DataLoader"

# run on an example under env -i: the agent comes from share/trainscope/agent next to the binary.
py=/usr/bin/python3
"$py" -c 'import torch' 2>/dev/null ||
  fail "$py has no torch: the run half needs Debian's python3-torch (scripts/bootstrap --test installs it)"
env -i "$b/bin/trainscope" run --out "$tmp/run" -- "$py" "$b/share/trainscope/examples/data_starved.py" 16 \
  >run.out 2>run.err || fail "run under env -i exited $?: $(tail -5 run.err)"
grep -q 'data_starved: done' run.out || fail "the example did not finish: $(tail -5 run.out)"
rep="$tmp/run/report.json"
[[ -f "$rep" ]] || fail "run wrote no report.json"
grep -q '"loaded": true' "$rep" || fail "the agent was not loaded (not found next to the binary?)"
python3 - "$rep" <<'PY' || fail "run's report is not what data_starved.py plants"
import json, sys
r = json.load(open(sys.argv[1]))
steps = r["run"]["agent"]["steps"]
ids = [f["id"] for f in r["findings"]]
assert steps >= 10, "steps %s" % steps
assert ids and ids[0] == "dataloader-starvation", ids
PY
# The store went where HOME is unset: the working folder, not the build host's.
[[ -f "$tmp/.local/share/trainscope/trainscope.db" ]] || fail "the run store is not under the working folder"
echo "bundle OK: $(basename "$archive"), $size bytes, glibc >= $want, libs: $(ls "$b/lib" | tr '\n' ' ')"
