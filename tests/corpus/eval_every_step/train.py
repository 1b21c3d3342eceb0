"""Full-batch node classification (a two-layer graph convolutional network on one synthetic graph,
every epoch one optimizer step), in the style of the public GCN examples: after each epoch the
model is scored in eval mode on its train and validation masks, although the scores are printed
only every 25 epochs. That evaluation is the model the loop trains, after every step: not a
teacher's forward inside the step. Times its own phases into own_times.json."""
# expect: top periodic-evaluation
# corpus: own-times
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

EPOCHS, PRINT_EVERY = 200, 25
NODES, FEATURES, HIDDEN, CLASSES, EDGES = 3000, 500, 64, 7, 12000


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


def normalised_adjacency(n, edges):
    """D^-1/2 (A + I) D^-1/2 as a sparse matrix (Kipf and Welling's renormalisation)."""
    src, dst = edges
    loops = torch.arange(n)
    rows = torch.cat([src, dst, loops])
    cols = torch.cat([dst, src, loops])
    deg = torch.zeros(n).index_add_(0, rows, torch.ones(rows.numel()))
    vals = deg[rows].rsqrt() * deg[cols].rsqrt()
    return torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (n, n)).coalesce()


class GraphConv(nn.Module):
    def __init__(self, fan_in, fan_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(fan_in, fan_out))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj):
        return torch.sparse.mm(adj, x @ self.weight)


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GraphConv(FEATURES, HIDDEN), GraphConv(HIDDEN, CLASSES)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x, adj):
        return F.log_softmax(self.conv2(self.dropout(F.relu(self.conv1(x, adj))), adj), dim=1)


torch.manual_seed(0)
features = (torch.rand(NODES, FEATURES) < 0.02).float()
labels = torch.randint(0, CLASSES, (NODES,))
adj = normalised_adjacency(NODES, torch.randint(0, NODES, (2, EDGES)))
perm = torch.randperm(NODES)
train_mask, val_mask = perm[:2000], perm[2000:]
model = GCN()
opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


def score(mask):
    model.eval()
    with torch.no_grad():
        out = model(features, adj)[mask]  # expect-site: periodic-evaluation
        return F.nll_loss(out, labels[mask]).item(), (out.argmax(1) == labels[mask]).float().mean().item()


own = {"eval_s": 0.0}
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
for epoch in range(1, EPOCHS + 1):
    model.train()
    opt.zero_grad()
    loss = F.nll_loss(model(features, adj)[train_mask], labels[train_mask])
    loss.backward()
    opt.step()
    t = time.monotonic()
    train_loss, train_acc = score(train_mask)  # expect-site: periodic-evaluation
    val_loss, val_acc = score(val_mask)  # expect-site: periodic-evaluation
    own["eval_s"] += time.monotonic() - t
    if epoch % PRINT_EVERY == 0:
        print(f"epoch {epoch} train {train_loss:.3f}/{train_acc:.3f} val {val_loss:.3f}/{val_acc:.3f}")
own["train_steps_s"] = time.monotonic() - t_first - own["eval_s"]
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
