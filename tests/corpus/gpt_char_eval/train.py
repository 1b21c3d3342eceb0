"""A character-level GPT in the style of small public training scripts: no DataLoader (batches
are sliced from one token tensor), periodic evaluation under torch.no_grad(), numpy imported
for the data preparation. Nothing is planted: a pegged CPU here is the model's own math, and
NumPy's bundled OpenBLAS does none of it."""
# expect: absent openblas-on-intel, memory-growth, dataloader-starvation, cpu-bound-transforms
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
text = "".join(chr(97 + (i * 7 + i // 13) % 26) for i in range(20000))
vocab = sorted(set(text))
stoi = {c: i for i, c in enumerate(vocab)}
data = torch.from_numpy(np.array([stoi[c] for c in text], dtype=np.int64))
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]
block, batch, n_embd, n_head, n_layer = 32, 16, 64, 4, 2
max_iters = int(sys.argv[1]) if len(sys.argv) > 1 else 120
eval_interval, eval_iters = 40, 5


def get_batch(split_name):
    d = train_data if split_name == "train" else val_data
    ix = torch.randint(len(d) - block, (batch,))
    return torch.stack([d[i:i + block] for i in ix]), torch.stack([d[i + 1:i + block + 1] for i in ix])


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))
        self.register_buffer("mask", torch.triu(torch.ones(block, block, dtype=torch.bool), 1))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:x.size(1), :x.size(1)], need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(len(vocab), n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
        self.head = nn.Linear(n_embd, len(vocab))

    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        logits = self.head(self.blocks(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


@torch.no_grad()
def estimate_loss(model):
    model.eval()
    out = {}
    for name in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            _, loss = model(*get_batch(name))
            losses[k] = loss.item()
        out[name] = losses.mean().item()
    model.train()
    return out


model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
for it in range(max_iters):
    if it % eval_interval == 0:
        print("step %d: %s" % (it, estimate_loss(model)))
    xb, yb = get_batch("train")
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
print("final loss %.3f (ppl %.1f)" % (loss.item(), math.exp(loss.item())))
