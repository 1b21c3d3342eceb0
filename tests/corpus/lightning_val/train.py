"""Lightning validating every 25 steps on a validation set read from storage, with the checkpoint
callback saving every 50 steps. The script times both itself (a callback around the validation
loop, a ModelCheckpoint subclass around its saves)."""
# corpus: torch2-only
# corpus: own-times
# expect: finding periodic-evaluation
import json
import time

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from torch.utils.data import DataLoader, Dataset


class Examples(Dataset):
    def __init__(self, n, read_s):
        self.n, self.read_s = n, read_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.read_s:
            time.sleep(self.read_s)
        return torch.randn(32), i % 4


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        time.sleep(0.01)  # the step's compute
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


own = {"eval_s": 0.0, "checkpoint_s": 0.0}


class TimeValidation(Callback):
    def on_validation_start(self, trainer, pl_module):
        self.t = time.monotonic()

    def on_validation_end(self, trainer, pl_module):
        own["eval_s"] += time.monotonic() - self.t


class TimedCheckpoint(ModelCheckpoint):
    def _save_checkpoint(self, trainer, filepath):
        t = time.monotonic()
        try:
            return super()._save_checkpoint(trainer, filepath)
        finally:
            own["checkpoint_s"] += time.monotonic() - t


trainer = L.Trainer(max_steps=100, accelerator="cpu", logger=False, val_check_interval=25, num_sanity_val_steps=0,
                    callbacks=[TimeValidation(), TimedCheckpoint(dirpath="ckpt", every_n_train_steps=50, save_top_k=-1)],
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Net(), DataLoader(Examples(4096, 0), batch_size=8, shuffle=True),
            DataLoader(Examples(192, 0.002), batch_size=16))
with open("own_times.json", "w") as fh:
    json.dump(own, fh)
