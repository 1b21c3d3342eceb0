"""Running metrics for the training loop."""
import torch


class CalibrationMeter:
    """Mean predicted probability per class over the epoch."""

    def __init__(self, classes):
        self.sum_probs = torch.zeros(classes)
        self.count = 0

    def update(self, logits):
        probs = logits.softmax(dim=-1)
        self.sum_probs = self.sum_probs + probs.sum(0)  # expect-site: memory-growth names meter.sum_probs
        self.count += logits.size(0)

    def value(self):
        return (self.sum_probs / max(1, self.count)).detach()
