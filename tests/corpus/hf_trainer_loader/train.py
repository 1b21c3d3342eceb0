"""Hugging Face Trainer on a dataset that waits on storage for every example; the
DataLoader is the Trainer's, so the place to change is the user's TrainingArguments."""
# corpus: torch2-only
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms, memory-growth
import time

import torch
import torch.nn as nn
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments


class RemoteExamples(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(0.003)  # an object-store read per example
        return {"features": torch.randn(32), "labels": torch.tensor(i % 4)}


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, features, labels=None):
        logits = self.net(features)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


args = TrainingArguments(output_dir="hf-out", per_device_train_batch_size=8, max_steps=60,  # expect-site: dataloader-starvation
                         report_to=[], logging_steps=1000, save_strategy="no", use_cpu=True,
                         disable_tqdm=True)
trainer = Trainer(model=Classifier(), args=args, train_dataset=RemoteExamples())
trainer.train()
