# A word-level LSTM language model trained the way PyTorch's public word_language_model example
# does it: the corpus is batchified into one tensor up front (no DataLoader), the weights are
# updated by hand (`p.data.add_(p.grad, alpha=-lr)`, no optimizer object), the hidden state is
# detached between batches and gradients are clipped. Synthetic tokens instead of a download.
import sys

import torch
import torch.nn as nn

import _count

torch.manual_seed(0)
NTOKENS, EMSIZE, NHID, BPTT, BATCH = 200, 32, 32, 20, 8


class RNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(NTOKENS, EMSIZE)
        self.rnn = nn.LSTM(EMSIZE, NHID, 2)
        self.decoder = nn.Linear(NHID, NTOKENS)

    def forward(self, inp, hidden):
        output, hidden = self.rnn(self.encoder(inp), hidden)
        return torch.log_softmax(self.decoder(output), dim=-1), hidden

    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(2, bsz, NHID), w.new_zeros(2, bsz, NHID))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


train_data = batchify(torch.randint(0, NTOKENS, (BATCH * BPTT * 40 + 1,)), BATCH)
model = RNNModel()
criterion = nn.NLLLoss()
lr = 5.0
epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for epoch in range(epochs):
    model.train()
    hidden = model.init_hidden(BATCH)
    for i in range(0, train_data.size(0) - 1, BPTT):
        seq_len = min(BPTT, len(train_data) - 1 - i)
        data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len].view(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, NTOKENS), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        _count.step()
