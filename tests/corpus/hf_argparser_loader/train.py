"""A Hugging Face example-style script (the shape of transformers' examples/pytorch run_*.py): the
TrainingArguments come from the command line through HfArgumentParser, and the Trainer reads a
dataset that waits on storage for every example. The user's fix is a flag on their command, not an
edit at the line that calls the parser."""
# corpus: torch2-only
# corpus: run python train.py --output_dir hf-out --per_device_train_batch_size 8 --max_steps 60 --report_to none --logging_steps 1000 --save_strategy no --use_cpu True --disable_tqdm True
# expect: top dataloader-starvation
# expect: fix dataloader-starvation train.py --output_dir hf-out
# expect: fix dataloader-starvation --dataloader_persistent_workers True
# expect: absent cpu-bound-transforms, memory-growth
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch.utils.data import Dataset
from transformers import HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    hidden: int = field(default=64, metadata={"help": "hidden width"})


class RemoteExamples(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(0.003)  # an object-store read per example
        return {"features": torch.randn(32), "labels": torch.tensor(i % 4)}


class Classifier(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 4))

    def forward(self, features, labels=None):
        logits = self.net(features)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()  # expect-site: dataloader-starvation
    trainer = Trainer(model=Classifier(model_args.hidden), args=training_args, train_dataset=RemoteExamples())
    trainer.train()


if __name__ == "__main__":
    main()
