"""The GPU loop `gpu-check --stage overhead` runs with and without `trainscope run`.

    python overhead_gpu.py MODEL STEPS     MODEL: mlp (short steps, about 5 ms on an H100) | gpt (a small GPT, bf16)

Prints one line: BENCH model=<m> steps=<n> median_ms=<..> mean_ms=<..>, the step times measured after
a 20-step warm-up with a CUDA synchronize at each step end (so every step's GPU work is counted).
"""
import math
import statistics
import sys
import time

import torch

model_name = sys.argv[1] if len(sys.argv) > 1 else "mlp"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
if not torch.cuda.is_available():
    print("BENCH skipped=no-cuda")
    sys.exit(0)
dev = torch.device("cuda")
torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, vocab=8192, d=768, layers=6, heads=12, ctx=512):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(ctx, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.head = torch.nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), -math.inf), 1))

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for b in self.blocks:
            x = b(x, self.mask[:t, :t])
        return self.head(x)


if model_name == "gpt":
    model = GPT().to(dev)
    x = torch.randint(0, 8192, (16, 512), device=dev)
    y = torch.randint(0, 8192, (16, 512), device=dev)
    loss_of = lambda: torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
else:
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).to(dev)
    x = torch.randn(512, 2048, device=dev)
    loss_of = lambda: model(x).float().pow(2).mean()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
times = []
for step in range(steps + 20):
    t0 = time.perf_counter()
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = loss_of()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if step >= 20:
        times.append((time.perf_counter() - t0) * 1e3)
print("BENCH model=%s steps=%d median_ms=%.4f mean_ms=%.4f" % (model_name, len(times), statistics.median(times),
                                                                 statistics.mean(times)))
