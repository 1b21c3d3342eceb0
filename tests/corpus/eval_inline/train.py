"""A character-level model whose validation loss is written inline in the loop (no evaluate()
function: the loop's own lines), under a condition written over three lines with backslashes, as
karpathy/llm.c's train_gpt2.py writes it; about a third of the run evaluates. The step and the
validation batches are sleep-bound (a loaded machine stretches neither much)."""
# expect: finding periodic-evaluation
# expect: fix periodic-evaluation (step % (2 * args.val_every) == 0 or last)
# corpus: waits
import argparse
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=120)
parser.add_argument("--val_every", type=int, default=20)
parser.add_argument("--val_batches", type=int, default=12)
args = parser.parse_args()

torch.manual_seed(0)
text = torch.randint(0, 256, (20000,))
train_data, val_data = text[:16000], text[16000:]
block = 16
model = nn.Sequential(nn.Embedding(256, 32), nn.Flatten(), nn.Linear(32 * block, 256))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)


def get_batch(data):
    ix = torch.randint(0, len(data) - block - 1, (8,))
    return torch.stack([data[i:i + block] for i in ix]), data[ix + block]


for step in range(args.steps + 1):
    last = step == args.steps
    if (args.val_every > 0 \
            and (step % args.val_every == 0 or last)) \
            and val_data is not None:
        model.eval()
        with torch.no_grad():
            val_loss = 0.0
            for _ in range(args.val_batches):
                x, y = get_batch(val_data)
                val_loss += nn.functional.cross_entropy(model(x), y).item()  # expect-site: periodic-evaluation first
                time.sleep(0.02)
        print(f"step {step}: val loss {val_loss / args.val_batches:.4f}")
    if last:
        break
    model.train()
    x, y = get_batch(train_data)
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    time.sleep(0.02)
