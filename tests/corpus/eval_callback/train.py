"""Training through an engine of the project's own (engine.py owns the loop), the script deciding
in its step-end callback to evaluate every 20 steps on 12 batches of 50 ms (2.4 s, about a quarter of
the run; with 20 ms batches it was 10% of a run whose start-up a loaded host had doubled, at the
rule's bar). The line to change is the script's, not the engine's, which calls the callback after
every step. The step and the evaluation batches are sleep-bound (a loaded machine stretches neither
much)."""
# expect: finding periodic-evaluation
# corpus: waits
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from engine import Engine

EVAL_EVERY, STEPS, EVAL_BATCHES = 20, 100, 12

X, Y = torch.randn(2048, 64), torch.randint(0, 10, (2048,))
train = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[:512], Y[:512]), batch_size=32)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
engine = Engine(model, torch.optim.SGD(model.parameters(), lr=0.01))


def evaluate(net):
    net.eval()
    total = 0.0
    with torch.no_grad():
        for i, (vx, vy) in enumerate(val):
            total += nn.functional.cross_entropy(net(vx), vy).item()
            time.sleep(0.05)  # scoring a batch against the references
            if i + 1 == EVAL_BATCHES:
                break
    net.train()
    return total / EVAL_BATCHES


def pace(eng):
    time.sleep(0.02)  # logging and bookkeeping each step


def report(eng):
    if eng.step % EVAL_EVERY == 0 and eng.step < STEPS:
        print(eng.step, eng.loss.item(), evaluate(eng.model))  # expect-site: periodic-evaluation


engine.on("step_end", pace)
engine.on("step_end", report)
engine.fit(train, STEPS)
