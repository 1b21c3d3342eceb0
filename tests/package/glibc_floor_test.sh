#!/usr/bin/env bash
# The release archive runs on the oldest glibc README promises: no ELF file in the unpacked archive
# (bin/trainscope, lib/*) asks for a GLIBC_x.y symbol version newer than the "glibc X.Y or newer"
# README's "Install on a GPU machine" states. A newer one would make the loader refuse to start the
# binary there ("version `GLIBC_2.34' not found"). src/portable/glibc_floor.cpp pins the symbols
# the build host would otherwise make newer; this catches a new call that slips past it.
# Uses the archive package_build made (no second build), or the wheel scripts/wheel made from it
# when DIST_DIR holds a .whl: then every ELF file in the wheel is checked against its platform tag
# (manylinux_X_Y: pip installs it on any glibc >= X.Y), and that tag against README's floor.
# Usage: glibc_floor_test.sh DIST_DIR SOURCE_DIR
set -euo pipefail
dist=$1 src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

# ver_le A B: true when version A <= version B, compared field by field as numbers
# (2.2.5 < 2.25 and 2.3 < 2.28: neither a string nor a decimal comparison gets both right).
ver_le() {
  local -a a b
  IFS=. read -ra a <<<"$1"
  IFS=. read -ra b <<<"$2"
  local i n=$((${#a[@]} > ${#b[@]} ? ${#a[@]} : ${#b[@]}))
  for ((i = 0; i < n; i++)); do
    local x=${a[i]:-0} y=${b[i]:-0}
    ((10#$x < 10#$y)) && return 0
    ((10#$x > 10#$y)) && return 1
  done
  return 0
}
# The comparison itself, on hand-picked pairs where string or decimal order would be wrong.
ver_le 2.2.5 2.25 || fail "ver_le: 2.2.5 <= 2.25"
ver_le 2.3.4 2.28 || fail "ver_le: 2.3.4 <= 2.28"
ver_le 2.28 2.28 || fail "ver_le: 2.28 <= 2.28"
! ver_le 2.28 2.3 || fail "ver_le: 2.28 > 2.3"
! ver_le 2.34 2.28 || fail "ver_le: 2.34 > 2.28"
! ver_le 2.25.1 2.25 || fail "ver_le: 2.25.1 > 2.25"

# The floor README states, e.g. "**glibc 2.28 or newer**".
floor=$(grep -oE '\*\*glibc [0-9]+(\.[0-9]+)+ or newer\*\*' "$src/README.md" | head -1 | grep -oE '[0-9]+(\.[0-9]+)+' || true)
[[ -n "$floor" ]] || fail "README.md states no minimum glibc (expected \"**glibc X.Y or newer**\" in \"Install on a GPU machine\")"

shopt -s nullglob
archives=("$dist"/trainscope-*-linux-x86_64.tar.gz "$dist"/trainscope-*.whl)
((${#archives[@]} == 1)) || fail "expected one archive or wheel in $dist, found: ${archives[*]:-none}"
tmp=$(mktemp -d /tmp/ts-glibc-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
what=README
if [[ "${archives[0]}" == *.whl ]]; then
  # trainscope-0.1.0-py3-none-manylinux_2_25_x86_64.whl -> 2.25
  tag=$(basename "${archives[0]}" .whl | grep -oE 'manylinux_[0-9]+_[0-9]+_x86_64$' || true)
  [[ -n "$tag" ]] || fail "$(basename "${archives[0]}") has no manylinux_X_Y_x86_64 platform tag"
  tagv=$(sed -E 's/manylinux_([0-9]+)_([0-9]+)_x86_64/\1.\2/' <<<"$tag")
  ver_le "$tagv" "$floor" || fail "the wheel's tag $tag asks for more than README's glibc $floor"
  floor=$tagv what="the wheel's tag $tag"
  python3 -m zipfile -e "${archives[0]}" "$tmp/wheel"
else
  tar -xzf "${archives[0]}" -C "$tmp"
fi

elves=0 newest=0 bad=()
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  elves=$((elves + 1))
  rel=${f#"$tmp"/*/}
  # objdump -T: "... (GLIBC_2.34) pthread_create" for an undefined, versioned reference.
  while read -r ver sym; do
    ver_le "$newest" "$ver" && newest=$ver
    ver_le "$ver" "$floor" || bad+=("$rel needs $sym@GLIBC_$ver")
  done < <(objdump -T "$f" | awk '/\*UND\*/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_[0-9.]+\)?$/) {
             v = $i; gsub(/[()]|GLIBC_/, "", v); print v, $NF } }')
done < <(find "$tmp" -type f -print0)

# bin/trainscope and lib/libisal.so.2 at least: a test that looked at nothing would pass anything.
((elves >= 2)) || fail "found $elves ELF files in $(basename "${archives[0]}"), expected bin/trainscope and lib/*"
[[ "$newest" != 0 ]] || fail "no GLIBC_ symbol versions found: is objdump -T reading the files?"
if ((${#bad[@]})); then
  echo "FAIL: symbol versions newer than glibc $floor ($what):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "  pin it in src/portable/ (glibc_floor.cpp + TS_GLIBC_FLOOR_WRAPS) or raise README's floor" >&2
  exit 1
fi
echo "glibc floor OK: $(basename "${archives[0]}"): $elves ELF files, newest symbol version GLIBC_$newest <= glibc $floor ($what)"
