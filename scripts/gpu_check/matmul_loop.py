"""A bf16 matmul loop that keeps the GPU's tensor cores busy for `gpu-check --stage watch`.

    python matmul_loop.py SECONDS [--size N]

Prints one line at the end: MATMUL seconds=<s> iters=<n> tflops=<achieved dense TFLOP/s>.
Without CUDA it prints MATMUL skipped=no-cuda and exits 0.
"""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
n = int(sys.argv[sys.argv.index("--size") + 1]) if "--size" in sys.argv else 8192
if not torch.cuda.is_available():
    print("MATMUL skipped=no-cuda")
    sys.exit(0)
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
t0 = time.perf_counter()
iters = 0
while time.perf_counter() - t0 < seconds:
    for _ in range(20):  # 20 GEMMs per sync: the queue stays full, the clock check stays cheap
        c = a @ b
    torch.cuda.synchronize()
    iters += 20
dt = time.perf_counter() - t0
print("MATMUL seconds=%.2f iters=%d tflops=%.1f" % (dt, iters, 2 * n ** 3 * iters / dt / 1e12))
