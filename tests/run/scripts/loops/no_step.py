# Decides not to train and exits 0, as pytorch/examples' distributed/FSDP2/example.py does without
# enough GPUs ("Unable to locate sufficient 2 gpus to run this example. Exiting."): the model is
# built, then the script leaves before any step. The report must say that no step ran, and nothing
# about a training that never happened (the start-up's busy threads are not a finding).
import sys

import torch
import torch.nn as nn

model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(8)])
opt = torch.optim.AdamW(model.parameters())
if torch.cuda.device_count() < 2:
    print("Unable to locate sufficient 2 gpus to run this example. Exiting.", file=sys.stderr)
    sys.exit(0)
