"""Tabular records in one binary file with a JSON manifest (offsets and labels), in the style of
an LMDB or HDF5 loader: each worker opens the store lazily on its first item (an open handle must
not cross fork), reading the manifest. A train and a validation DataLoader from one helper, with
workers and without persistent_workers: every epoch's two passes start new workers, and each of
them opens the store again before its first batch. The validation itself is small (2 batches of
512 forward-only samples an epoch, against 16 training steps of 128): its time is its workers'
starts, not evaluation to schedule less often."""
# expect: top worker-restarts
# expect: fix worker-restarts persistent_workers=True
# expect: absent memory-growth, periodic-evaluation
# Not asserted: cpu-bound-transforms. On the 2-core test host the two workers take cores from the
# model's two intra-op threads, and loading in the loop is faster than any workers: 64 training
# steps took 1.09-1.12 s as written, 0.76-0.79 s with persistent_workers=True and 0.38-0.51 s with
# num_workers=0 (trainscope run --set, 2026-12-03, load average 1.0). Its "workers cost more than
# they save" is then true of that host, and whether its measured premise (the wait against one
# batch's loading) clears varies from run to run.
import json
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, RandomSampler

N, DIM, CLASSES = 300_000, 32, 10


def write_store(root):
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((N, DIM)).astype(np.float32)
    feats.tofile(os.path.join(root, "records.bin"))
    manifest = [{"offset": i * DIM * 4, "label": int(i % CLASSES), "source": "shard-%03d" % (i % 500)} for i in range(N)]
    with open(os.path.join(root, "manifest.json"), "w") as fh:
        json.dump(manifest, fh)


class RecordStore(Dataset):
    def __init__(self, root, lo, hi):
        self.root, self.lo, self.hi = root, lo, hi
        self.entries = self.records = None  # opened in each worker, on its first item

    def _open(self):
        with open(os.path.join(self.root, "manifest.json")) as fh:
            self.entries = json.load(fh)
        self.records = np.memmap(os.path.join(self.root, "records.bin"), dtype=np.float32, mode="r")

    def __len__(self):
        return self.hi - self.lo

    def __getitem__(self, i):
        if self.entries is None:
            self._open()
        e = self.entries[self.lo + i]
        start = e["offset"] // 4
        return torch.from_numpy(np.array(self.records[start:start + DIM])), e["label"]


def make_loader(ds, batch_size, sampler=None):
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=2)  # expect-site: worker-restarts


def main(root):
    write_store(root)
    train_ds, val_ds = RecordStore(root, 0, 270_000), RecordStore(root, 270_000, N)
    train_loader = make_loader(train_ds, 128, RandomSampler(train_ds, num_samples=2048))
    val_loader = make_loader(val_ds, 512, RandomSampler(val_ds, num_samples=1024))
    model = nn.Sequential(nn.Linear(DIM, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, CLASSES))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(4):
        model.train()
        for x, y in train_loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()
        print(f"epoch {epoch}: train loss {loss.item():.3f}, val acc {correct / 1024:.3f}")


if __name__ == "__main__":
    root = tempfile.mkdtemp(prefix="records-")
    try:
        main(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
