"""On-policy reinforcement learning on Gymnasium's CartPole, in the style of Stable-Baselines3's
PPO: the policy collects each rollout in eval mode under torch.no_grad() (set_training_mode(False)),
then trains in training mode on minibatches of it for a few epochs. The rollouts are about half of
the run and they are the training's data: not an evaluation, although the model is in eval mode.
Nothing here is evaluated."""
# expect: absent periodic-evaluation, dataloader-starvation, memory-growth
# corpus: torch2-only
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn

ROLLOUTS, HORIZON, EPOCHS, MINIBATCH = 6, 512, 4, 64


class ActorCritic(nn.Module):
    def __init__(self, obs, actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.pi, self.v = nn.Linear(64, actions), nn.Linear(64, 1)

    def forward(self, x):
        h = self.body(x)
        return torch.distributions.Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


env = gym.make("CartPole-v1")
policy = ActorCritic(env.observation_space.shape[0], env.action_space.n)
opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
obs, _ = env.reset(seed=0)

for rollout in range(ROLLOUTS):
    buf = {"obs": [], "act": [], "logp": [], "rew": [], "val": [], "done": []}
    policy.eval()
    with torch.no_grad():
        for t in range(HORIZON):
            x = torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0)
            dist, value = policy(x)
            action = dist.sample()
            next_obs, reward, terminated, truncated, _ = env.step(int(action))
            for k, v in (("obs", obs), ("act", int(action)), ("logp", float(dist.log_prob(action))),
                         ("rew", reward), ("val", float(value)), ("done", terminated or truncated)):
                buf[k].append(v)
            obs = env.reset()[0] if terminated or truncated else next_obs
    # Returns to go, discounted, reset at episode ends.
    ret, g = np.zeros(HORIZON, dtype=np.float32), 0.0
    for t in reversed(range(HORIZON)):
        g = buf["rew"][t] + 0.99 * g * (1 - buf["done"][t])
        ret[t] = g
    o = torch.as_tensor(np.array(buf["obs"]), dtype=torch.float32)
    a, old_logp = torch.tensor(buf["act"]), torch.tensor(buf["logp"])
    ret_t = torch.from_numpy(ret)
    adv = ret_t - torch.tensor(buf["val"])
    policy.train()
    for epoch in range(EPOCHS):
        for idx in torch.randperm(HORIZON).split(MINIBATCH):
            dist, value = policy(o[idx])
            ratio = (dist.log_prob(a[idx]) - old_logp[idx]).exp()
            clipped = torch.min(ratio * adv[idx], ratio.clamp(0.8, 1.2) * adv[idx])
            loss = -clipped.mean() + 0.5 * (value - ret_t[idx]).pow(2).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(f"rollout {rollout}: return to go {ret.mean():.1f}")
