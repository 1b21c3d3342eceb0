"""A small training engine of the project's own, kept in its own module: it owns the loop and
calls the script's callbacks after every step (as minGPT's Trainer calls its `on_batch_end`
callbacks, and many in-house trainers do). The engine knows nothing of evaluation."""
from collections import defaultdict

import torch.nn as nn


class Engine:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.callbacks = defaultdict(list)
        self.step = 0
        self.loss = None

    def on(self, event, fn):
        self.callbacks[event].append(fn)

    def fire(self, event):
        for fn in self.callbacks[event]:
            fn(self)

    def fit(self, loader, steps):
        self.model.train()
        while self.step < steps:
            for x, y in loader:
                self.loss = nn.functional.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad()
                self.loss.backward()
                self.optimizer.step()
                self.step += 1
                self.fire("step_end")  # every step, into the script's callbacks
                if self.step == steps:
                    return
