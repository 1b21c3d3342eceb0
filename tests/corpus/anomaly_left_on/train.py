"""A small character-level transformer trained on batches sliced from one tensor, with autograd
anomaly detection left on from chasing a NaN last week: every operation of the forward now stores
its Python stack and the backward tests every gradient for NaN, at every step. Nothing else is
wrong with it (no DataLoader, the loss read every 50 steps)."""
# expect: top anomaly-detection
# expect: absent dataloader-starvation, memory-growth, in-loop-io
import torch
import torch.nn as nn

torch.autograd.set_detect_anomaly(True)  # expect-site: anomaly-detection

STEPS, BATCH, BLOCK, VOCAB, WIDTH = 100, 16, 32, 65, 64
torch.manual_seed(0)
text = torch.randint(0, VOCAB, (50_000,))


def get_batch():
    i = torch.randint(0, text.numel() - BLOCK - 1, (BATCH,))
    x = torch.stack([text[j:j + BLOCK] for j in i.tolist()])
    y = torch.stack([text[j + 1:j + BLOCK + 1] for j in i.tolist()])
    return x, y


class CharModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.zeros(BLOCK, WIDTH))
        layer = nn.TransformerEncoderLayer(WIDTH, nhead=4, dim_feedforward=4 * WIDTH, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x) + self.pos))


model = CharModel()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(STEPS):
    x, y = get_batch()
    loss = nn.functional.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(step, loss.item())
