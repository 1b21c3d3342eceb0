"""On-policy RL in the style of PPO/A2C scripts: each iteration collects a rollout by running
the policy under torch.no_grad() in training mode (one call per environment step; the environment
itself a short sleep), then makes several minibatch updates on it. The rollouts are most of the
run and they are the training's data, not an evaluation: nothing here is evaluated. Times its own
phases into own_times.json."""
# expect: absent periodic-evaluation
# corpus: own-times
import json
import os
import time

import torch
import torch.nn as nn

ITERATIONS, ROLLOUT, EPOCHS, MINIBATCHES = 16, 48, 2, 4


def since_launch():
    """Seconds since this process started (/proc/self/stat starttime, CLOCK_BOOTTIME ticks)."""
    start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start


class Env:
    """A point on a line that wants to reach 0; each step costs the simulator a millisecond."""

    def __init__(self):
        self.x = torch.zeros(8)

    def step(self, action):
        time.sleep(0.001)
        self.x = self.x * 0.9 + (action.float() - 0.5) * 0.1 + torch.randn(8) * 0.01
        return self.x.clone(), -self.x.abs().sum().item()


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.pi, self.v = nn.Linear(64, 2), nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


env, agent = Env(), ActorCritic()
opt = torch.optim.Adam(agent.parameters(), lr=3e-4)
own = {"eval_s": 0.0}
own["before_first_step_s"] = since_launch()
t_first = time.monotonic()
obs = env.x.clone()
for it in range(ITERATIONS):
    states, actions, logps, rewards = [], [], [], []
    for _ in range(ROLLOUT):
        with torch.no_grad():
            logits, _ = agent(obs.unsqueeze(0))
            dist = torch.distributions.Categorical(logits=logits)
            a = dist.sample()
        states.append(obs)
        actions.append(a)
        logps.append(dist.log_prob(a))
        obs, r = env.step(a)
        rewards.append(r)
    S, A, LP = torch.stack(states), torch.cat(actions), torch.cat(logps)
    ret = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    for _ in range(EPOCHS):
        for idx in torch.randperm(ROLLOUT).chunk(MINIBATCHES):
            logits, v = agent(S[idx])
            dist = torch.distributions.Categorical(logits=logits)
            adv = ret[idx] - v.detach()
            ratio = (dist.log_prob(A[idx]) - LP[idx]).exp()
            loss = -(torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv)).mean() + 0.5 * ((ret[idx] - v) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
own["train_steps_s"] = time.monotonic() - t_first
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
