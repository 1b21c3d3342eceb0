"""The training loop, kept apart from the script as the DDP tutorials keep theirs."""
import gc

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, dataset, batch_size, lr):
        self.model = DDP(model)  # expect-site: communication-bound
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.loader = DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))

    def _run_batch(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(x), y)  # expect-site: communication-bound
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, steps):
        done = 0
        epoch = 0
        while done < steps:
            self.loader.sampler.set_epoch(epoch)
            for x, y in self.loader:
                self._run_batch(x, y)
                done += 1
                if done == steps:
                    return
            epoch += 1

    def close(self):
        # DDP freed before destroy_process_group(): left to the interpreter's last garbage
        # collection, the gloo group's worker thread may abort the rank at exit (PyTorch 2.13).
        del self.model, self.optimizer
        gc.collect()
