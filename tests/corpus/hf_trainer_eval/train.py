"""Hugging Face Trainer evaluating every 20 steps on a validation set read from storage (a fifth of
the run or more) and saving every 50: the evaluation and the checkpoints are the Trainer's own
loops. The script times them itself (a Trainer subclass around evaluate() and _save_checkpoint())."""
# corpus: torch2-only
# corpus: own-times
# expect: finding periodic-evaluation
import json
import time

import torch
import torch.nn as nn
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments


class Examples(Dataset):
    def __init__(self, n, read_s):
        self.n, self.read_s = n, read_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.read_s:
            time.sleep(self.read_s)  # an object-store read per example
        return {"features": torch.randn(32), "labels": torch.tensor(i % 4)}


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, features, labels=None):
        if self.training:
            time.sleep(0.01)  # the step's compute
        logits = self.net(features)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


own = {"eval_s": 0.0, "checkpoint_s": 0.0}


class TimedTrainer(Trainer):
    def evaluate(self, *args, **kwargs):
        t = time.monotonic()
        try:
            return super().evaluate(*args, **kwargs)
        finally:
            own["eval_s"] += time.monotonic() - t

    def _save_checkpoint(self, *args, **kwargs):
        t = time.monotonic()
        try:
            return super()._save_checkpoint(*args, **kwargs)
        finally:
            own["checkpoint_s"] += time.monotonic() - t


args = TrainingArguments(output_dir="hf-out", per_device_train_batch_size=8, per_device_eval_batch_size=16,
                         max_steps=100, eval_strategy="steps", eval_steps=20, save_strategy="steps", save_steps=50,
                         report_to=[], logging_steps=1000, use_cpu=True, disable_tqdm=True)
trainer = TimedTrainer(model=Classifier(), args=args, train_dataset=Examples(4096, 0),
                       eval_dataset=Examples(192, 0.002))
trainer.train()
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
