"""Reference counts for tests/diagnose/shape_rules_test.cpp, read off a raw trace with Python's json
module (none of trainscope's code): the half-precision GEMM calls whose shapes are not Tensor Core
friendly, by docs/FINDINGS.md's definition of tensor-core-shapes (NVIDIA's "Matrix Multiplication
Background" guide: fp16/bf16 GEMM dimensions multiples of 8), and the top kernels' shares of all
kernel time (few-ops-dominate: the profiler's key_averages() sorted by cuda_time_total).

    python3 shape_rules_reference.py TRACE.json[.gz]
prints one `name value` per line. Both counted inside the profiled steps as
tests/analysis/reference_values.py finds them (TensorBoard's steps: ProfilerStep# extended to their
GPU work, the incomplete tail dropped), the window trainscope's analyses use.
"""
import collections
import os
import sys

GEMM_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::convolution"}
HALF = {"c10::Half", "c10::BFloat16"}


def bad(d):
    return d > 0 and d % 8 != 0


def misaligned(name, shapes):
    if name == "aten::convolution":  # input channels; weight's output and input channels
        x = shapes[0] if shapes else []
        w = shapes[1] if len(shapes) > 1 else []
        return (len(x) >= 2 and bad(x[1])) or (len(w) >= 2 and (bad(w[0]) or bad(w[1])))
    # a GEMM: the last two dimensions of every tensor argument (M, N, K among them)
    return any(bad(d) for s in shapes if isinstance(s, list) for d in s[-2:] if isinstance(d, int))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
import reference_values as ref  # noqa: E402  the profiled steps, by TensorBoard's definition (docs/ANALYSES.md)

ev, _ = ref.load(sys.argv[1])
steps, _, _ = ref.find_steps(ev)
lo, hi = (steps[0][0], steps[-1][1]) if steps else (float("-inf"), float("inf"))

half_calls = bad_calls = 0
for e in ev["host"]:
    a = e.args
    if e.name not in GEMM_OPS or not (lo <= e.ts < hi):
        continue
    if not any(t in HALF for t in a.get("Input type", [])):
        continue
    half_calls += 1
    bad_calls += misaligned(e.name, a.get("Input Dims", []))
print("half_gemm_calls", half_calls)
print("misaligned_calls", bad_calls)

by_name = collections.Counter()
for k in ev["kernel"]:
    if lo <= k.ts < hi:
        by_name[k.name] += k.dur
total = sum(by_name.values())
top = sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))
print("distinct_kernels", len(top))
print("kernel_total_ms", total / 1e6)
print("top1_share_pct", 100.0 * top[0][1] / total if total else 0)
print("top3_share_pct", 100.0 * sum(v for _, v in top[:3]) / total if total else 0)
