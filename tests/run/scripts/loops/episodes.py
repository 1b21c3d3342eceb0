# A policy-gradient loop in the shape of PyTorch's public REINFORCE example: the optimizer is
# built before the loop, each episode runs the policy once per environment step (with autograd
# recording, its log-probabilities kept) and ends with one optimizer step. No environment library:
# an episode is EPISODE_LEN fixed steps of random observations. argv: episodes, episode length.
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import _count

torch.manual_seed(0)
episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 30
episode_len = int(sys.argv[2]) if len(sys.argv) > 2 else 12


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 128)
        self.affine2 = nn.Linear(128, 2)

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(episodes):
    log_probs, rewards = [], []
    for t in range(episode_len):
        probs = policy(torch.randn(1, 4))
        m = torch.distributions.Categorical(probs)
        action = m.sample()
        log_probs.append(m.log_prob(action))
        rewards.append(float(action.item()))
    returns = torch.tensor(rewards)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    loss = torch.cat([-lp * r for lp, r in zip(log_probs, returns)]).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    _count.step()
