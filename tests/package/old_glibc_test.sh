#!/usr/bin/env bash
# The release archive on a real older glibc: Debian 11's glibc 2.31 (below 2.34, where libpthread
# and libdl still hold the thread and dlopen functions, __libc_start_main has its old contract, and
# there is no _dl_find_object, arc4random or new stat) loads the bundle's binary through its own
# loader, which refuses any symbol version 2.31 lacks. glibc_floor_test.sh checks the versions on
# paper; this runs them: startup and constructors, an analysis, an error thrown and caught (the
# unwinder's _dl_find_object replacement), NVML's dlopen failing cleanly, and a recorded `watch`
# (a sampling thread with timed waits, SQLite, stat, fcntl) listed by `runs`. The libc6 package comes from Debian's archive through
# apt with private lists (the host's apt state is untouched), checked by apt's signatures, and is
# cached in CACHE_DIR; without network the test is skipped (exit 77).
# Usage: old_glibc_test.sh DIST_DIR SOURCE_DIR CACHE_DIR
set -euo pipefail
dist=$(realpath "$1") src=$(realpath "$2") cache=$(realpath -m "$3")
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

root="$cache/root"
ld="$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
libdir="$root/lib/x86_64-linux-gnu"
if [[ ! -x "$ld" ]]; then
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "no apt-get/dpkg-deb to fetch Debian 11's libc6"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [[ -f "$keyring" ]] || skip "no $keyring to check Debian 11's packages with"
  apt="$cache/apt"
  rm -rf "$cache" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/deb"
  echo "deb [signed-by=$keyring] http://deb.debian.org/debian bullseye main" >"$apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null
        -o APT::Sandbox::User=root)
  echo "fetching Debian 11's libc6 (glibc 2.31)" >&2
  timeout 300 apt-get -q "${opts[@]}" update >"$cache/apt.log" 2>&1 || skip "apt-get update failed (offline?): $(tail -2 "$cache/apt.log")"
  (cd "$cache/deb" && timeout 300 apt-get -q "${opts[@]}" download libc6 >>"$cache/apt.log" 2>&1) ||
    skip "apt-get download libc6 failed (offline?): $(tail -2 "$cache/apt.log")"
  dpkg-deb -x "$cache"/deb/libc6_*.deb "$root"
  rm -rf "$apt"
fi
[[ -x "$ld" ]] || fail "Debian 11's libc6 has no $ld"
# (2.31's loader has no --version; its file name carries the release.)
glibc=$(cd "$libdir" && ls ld-2.*.so 2>/dev/null | sed -E 's/^ld-(.*)\.so$/\1/')
[[ "$glibc" == 2.31 ]] || fail "expected glibc 2.31 from Debian 11, the loader says $glibc"

archives=("$dist"/trainscope-*-linux-x86_64.tar.gz)
((${#archives[@]} == 1)) && [[ -f "${archives[0]}" ]] || fail "expected one archive in $dist, found: ${archives[*]}"
tmp=$(mktemp -d /tmp/ts-oldglibc-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "${archives[0]}" -C "$tmp"
b=$(echo "$tmp"/trainscope-*)
# The old loader with the old libraries first: the bundle's lib/ still comes from its run path.
old() { env -i HOME="$tmp/home" TRAINSCOPE_HOME="$tmp/home" "$ld" --library-path "$libdir" "$b/bin/trainscope" "$@"; }
mkdir -p "$tmp/home"

# Every glibc library resolves to 2.31's, none to the host's.
libs=$("$ld" --library-path "$libdir" --list "$b/bin/trainscope")
while read -r so arrow path _; do
  [[ "$arrow" == "=>" ]] || continue
  case "$so" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*)
      [[ "$(realpath "$path")" == "$(realpath "$libdir")"/* ]] || fail "$so resolves to $path, not glibc 2.31's" ;;
  esac
done <<<"$libs"
grep -q 'libpthread.so.0' <<<"$libs" || fail "the binary does not name libpthread.so.0 (glibc < 2.34 keeps pthread_create there): $libs"

cd "$tmp"
out=$(old --version 2>&1) || fail "--version under glibc 2.31: $out"
[[ "$out" == "trainscope "* ]] || fail "--version under glibc 2.31 printed: $out"

old analyze --json "$src/tests/data/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz" \
  >analyze.json 2>analyze.err || fail "analyze under glibc 2.31: $(tail -3 analyze.err)"
grep -q '"id": "dataloader-starvation"' analyze.json || fail "analyze under glibc 2.31 did not find the starved DataLoader"

# A missing file is a UserError thrown deep in the reader and caught in main: unwinding must work.
rc=0
old analyze "$tmp/missing.pt.trace.json" >missing.out 2>missing.err || rc=$?
grep -q 'terminate called' missing.err && fail "an exception was not caught under glibc 2.31: $(cat missing.err)"
((rc == 1)) || fail "analyze of a missing file exited $rc under glibc 2.31, expected 1: $(cat missing.err)"
grep -qF "$tmp/missing.pt.trace.json" missing.err || fail "the error does not name the missing file: $(cat missing.err)"

old snapshot --json >snapshot.json 2>snapshot.err || fail "snapshot under glibc 2.31: $(tail -3 snapshot.err)"
grep -q '"available": false' snapshot.json || grep -q '"available": true' snapshot.json ||
  fail "snapshot under glibc 2.31 has no NVML state: $(head -c 300 snapshot.json)"

# 1 s at 100 ms is about 10 host samples (11 here on an idle machine); 5 leaves room for a busy one.
old watch --plain --duration 1 --interval 100ms >watch.out 2>watch.err || fail "watch under glibc 2.31: $(tail -3 watch.err)"
old runs --json >runs.json 2>runs.err || fail "runs under glibc 2.31: $(tail -3 runs.err)"
grep -q '"kind": "watch"' runs.json || fail "the store holds no watch recording under glibc 2.31: $(cat runs.json)"
host=$(grep -oE '[0-9]+ host' runs.json | head -1 | cut -d' ' -f1)
((${host:-0} >= 5)) || fail "watch recorded ${host:-no} host samples in 1 s at 100 ms under glibc 2.31"
echo "glibc 2.31 OK: --version, analyze, a caught error, snapshot, watch --record, runs"
