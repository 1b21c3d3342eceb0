"""Node classification with full attention over a graph's 2048 nodes on the CPU, the shape of
pytorch/examples' gat (a dense adjacency matrix, one score matrix per head): every step builds
4 heads x 2048 x 2048 float scores (64 MiB) several times over, in forward and backward, and frees
them. Each block is above glibc's largest mmap threshold (32 MiB), so malloc maps it anew and
the kernel zero-fills its pages every step. No DataLoader: the graph is one tensor."""
# expect: top page-fault-churn
# expect: fix page-fault-churn MALLOC_MMAP_MAX_=0
import torch
import torch.nn as nn

torch.manual_seed(0)
N, F, H, D, C, STEPS = 2048, 64, 4, 16, 7, 30

x = torch.randn(N, F)
adj = (torch.rand(N, N) < 0.005).float() + torch.eye(N)
labels = torch.randint(0, C, (N,))


class GraphAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(F, H * D)
        self.src = nn.Parameter(torch.randn(H, D) * 0.1)
        self.dst = nn.Parameter(torch.randn(H, D) * 0.1)
        self.out = nn.Linear(H * D, C)

    def forward(self, x, adj):
        h = self.proj(x).view(N, H, D)
        # (H, N, N) scores: a 64 MiB tensor, and as many again for each op on it
        scores = (h * self.src).sum(-1).t().unsqueeze(2) + (h * self.dst).sum(-1).t().unsqueeze(1)
        scores = torch.nn.functional.leaky_relu(scores, 0.2).masked_fill(adj.unsqueeze(0) == 0, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        out = torch.bmm(att, h.transpose(0, 1)).transpose(0, 1).reshape(N, H * D)
        return self.out(torch.relu(out))


model = GraphAttention()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(STEPS):
    loss = nn.functional.cross_entropy(model(x, adj), labels)  # expect-site: page-fault-churn
    opt.zero_grad()
    loss.backward()
    opt.step()
