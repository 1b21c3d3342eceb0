"""Hugging Face Trainer on a small GPT-2 built from a config (no download): the loop trainscope
must find inside transformers' own training loop (tests/run/frameworks_test.cpp).
argv: max_steps dataloader_num_workers"""
import sys

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

max_steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out_dir = sys.argv[3] if len(sys.argv) > 3 else "/tmp/ts-hf-trainer"


class Tokens(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 256, (32,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                                          bos_token_id=0, eos_token_id=0))
args = TrainingArguments(output_dir=out_dir, max_steps=max_steps, per_device_train_batch_size=8,
                         dataloader_num_workers=workers, dataloader_pin_memory=False, report_to=[],
                         save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True,
                         learning_rate=1e-3, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=Tokens())
trainer.train()
print("hf_trainer: done %d steps" % trainer.state.global_step, flush=True)
