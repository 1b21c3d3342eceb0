"""Lightning with a DataModule whose dataset waits on storage for every sample."""
# corpus: torch2-only
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms, memory-growth
import time

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(0.003)
        return torch.randn(32), i % 4


class Data(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(Remote(), batch_size=8, shuffle=True)  # expect-site: dataloader-starvation


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


trainer = L.Trainer(max_steps=60, accelerator="cpu", logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Net(), datamodule=Data())
