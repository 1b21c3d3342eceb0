"""Checkpoint helpers shared by the project's scripts."""
import os

import torch


def save_checkpoint(model, optimizer, step, directory):
    path = os.path.join(directory, "last.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)  # expect-site: in-loop-io
    return path
