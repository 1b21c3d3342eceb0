"""A small language model whose periodic evaluation runs three things in a row, as public GPT
training scripts do: a validation loss on a few batches first, then a multiple-choice benchmark
scored one item at a time (four candidate endings, one forward each item), then a few sampled
tokens. The benchmark is most of the evaluation's time, though it is not its first call: the
finding must name its line first."""
# expect: top periodic-evaluation
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
vocab, block, n_embd = 64, 32, 96
data = torch.randint(0, vocab, (20000,))
train_data, val_data = data[:18000], data[18000:]
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
eval_interval, val_batches, bench_items, sample_tokens = 25, 2, 600, 6


def get_batch(d, batch=16):
    ix = torch.randint(len(d) - block - 1, (batch,))
    return torch.stack([d[i:i + block] for i in ix]), torch.stack([d[i + 1:i + block + 1] for i in ix])


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                 nn.LayerNorm(n_embd))
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx, targets=None):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        logits = self.head(self.mlp(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1))
        return logits, loss


# The benchmark: items of a context and four endings, rendered to token rows once.
items = [(torch.randint(0, vocab, (4, block)), int(torch.randint(0, 4, ()))) for _ in range(bench_items)]

model = TinyLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(steps):
    if step % eval_interval == 0:
        model.eval()
        with torch.no_grad():
            val = sum(model(*get_batch(val_data))[1].item() for _ in range(val_batches)) / val_batches
            correct = 0
            for rows, label in items:
                logits, _ = model(rows)  # expect-site: periodic-evaluation first
                lp = F.log_softmax(logits[:, :-1], -1).gather(-1, rows[:, 1:, None]).squeeze(-1).mean(1)
                correct += int(lp.argmax().item() == label)
            ctx = torch.zeros(1, 1, dtype=torch.long)
            for _ in range(sample_tokens):
                logits, _ = model(ctx[:, -block:])
                ctx = torch.cat([ctx, torch.multinomial(F.softmax(logits[:, -1], -1), 1)], 1)
        print("step %d: val %.3f, benchmark %d/%d" % (step, val, correct, bench_items))
        model.train()
    xb, yb = get_batch(train_data)
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
