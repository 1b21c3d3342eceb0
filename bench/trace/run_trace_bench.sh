#!/bin/bash
# Builds a >= 500 MB trace from a real one (bench/data/, gitignored), gzips it, and runs the
# reader benchmark against Python's json.load on the same bytes.
# Usage: bench/trace/run_trace_bench.sh [BUILD_DIR] [MIN_MB] [SOURCE_TRACE]
#   SOURCE_TRACE defaults to the 2021-form ResNet-50 trace; pass
#   tests/data/hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz for a modern Kineto one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
min_mb=${2:-500}
data=$root/bench/data
mkdir -p "$data"
src=${3:-$root/tests/data/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz}
json=$data/big_$(basename "$src" | cut -c1-11).json
if [ ! -f "$json" ] || [ "$(stat -c %s "$json")" -lt $((min_mb * 1000000)) ]; then
  python3 "$root/bench/trace/make_big_trace.py" "$src" "$json" "$min_mb"
fi
if [ ! -f "$json.gz" ] || [ "$json.gz" -ot "$json" ]; then
  echo "gzip -6 $json ..." >&2
  gzip -6 -c "$json" > "$json.gz.tmp" && mv "$json.gz.tmp" "$json.gz"
fi
cmake --build "$build" --target trace_read_bench > /dev/null
cat "$json" "$json.gz" > /dev/null  # warm the page cache: measure parsing, not the disk
"$build/bench/trace/trace_read_bench" "$json" "$json.gz" --runs 3
