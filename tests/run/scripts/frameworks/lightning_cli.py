# A Lightning script driven by LightningCLI (the shape of Lightning's own examples and templates):
# the Trainer is built from the command line (`fit --trainer.max_steps N ...`), so a fix to one of
# its settings is a flag on that command, not an edit at the LightningCLI(...) line.
import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
    from lightning.pytorch.cli import LightningCLI
except ImportError:  # the older package name
    import pytorch_lightning as pl
    from pytorch_lightning.cli import LightningCLI


class Model(pl.LightningModule):
    def __init__(self, hidden: int = 32):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(1024, 16), torch.randint(0, 2, (1024,))), batch_size=16)


if __name__ == "__main__":
    # No config.yaml written beside the run: a second run would refuse to overwrite the first's.
    LightningCLI(Model, save_config_callback=None)
