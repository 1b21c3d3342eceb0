"""Lightning's Trainer.fit on a small MLP (tests/run/frameworks_test.cpp): the optimizer step runs
inside Lightning's closure, the DataLoader is the user's, Lightning moves each batch itself.
argv: max_steps num_workers precision"""
import sys

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

max_steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
precision = sys.argv[3] if len(sys.argv) > 3 else "32-true"


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


torch.manual_seed(0)
ds = TensorDataset(torch.randn(4096, 32), torch.randint(0, 4, (4096,)))
loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=workers)
trainer = L.Trainer(max_steps=max_steps, accelerator="cpu", devices=1, precision=precision, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Net(), loader)
print("lightning_fit: done %d steps" % trainer.global_step, flush=True)
