"""DDP under torchrun with the loop in a Trainer class of its own module (as the DDP tutorials
write it): a wide model and a small batch, so each step's gradient all-reduce (about 4 MiB over
gloo) costs more than its compute. Data from memory: nothing waits on storage."""
# corpus: run torchrun --standalone --nproc_per_node 2 train.py
# expect: top communication-bound
# expect: fix communication-bound no_sync
# expect: absent dataloader-starvation, memory-growth
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import TensorDataset

from trainer import Trainer


def build_model():
    layers = []
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(512, 10))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(2048, 512), torch.randint(0, 10, (2048,)))
    trainer = Trainer(build_model(), data, batch_size=4, lr=0.01)
    trainer.train(steps=40)
    trainer.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
