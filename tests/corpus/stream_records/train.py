"""Training on a stream of records (an IterableDataset reading JSON lines from a file, each record
fetched from slow storage: a short sleep), in the loop's own process. The loop waits for data; its
__iter__ never splits the stream by worker, so the fix must split it before adding workers (each
worker would otherwise yield every record): no --set can apply it."""
# expect: top dataloader-starvation
# expect: absent cpu-bound-transforms
# expect: code-change dataloader-starvation
import json
import os
import tempfile
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, IterableDataset

STEPS = 120


class JsonLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as fh:
            for line in fh:
                time.sleep(0.004)  # the record comes from remote storage
                r = json.loads(line)
                yield torch.tensor(r["x"]), r["y"]


path = os.path.join(tempfile.mkdtemp(), "records.jsonl")
with open(path, "w") as fh:
    for i in range(8 * STEPS + 64):
        fh.write(json.dumps({"x": [((i * 7 + j) % 13) / 13.0 for j in range(32)], "y": i % 4}) + "\n")

loader = DataLoader(JsonLines(path), batch_size=8)  # expect-site: dataloader-starvation
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == STEPS:
        break
