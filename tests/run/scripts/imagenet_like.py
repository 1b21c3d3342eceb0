"""The ImageNet case from the H100 (pytorch/examples imagenet/main.py --dummy), scaled to a 2-core
CI machine: every sample is computed on the CPU (FakeData-like: a random image per index, then a
random crop, a flip and normalisation as tensor operations), so loading computes rather than waits,
and the DataLoader has fewer workers than the cores can serve. On the H100 box that was 4 workers
beside 12 usable cores; here it is num_workers=0 beside a second core the loop leaves free. A small
convnet trains on the batches. trainscope must put dataloader-starvation first, with a worker
count and a gain above 1. Usage: imagenet_like.py [steps]
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
SIZE, CROP = 112, 96


class FakeImages(Dataset):
    """Like torchvision.datasets.FakeData: a random image and label per index, made on the CPU."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, SIZE, SIZE), generator=g, dtype=torch.uint8)
        top, left = (int(v) for v in torch.randint(0, SIZE - CROP, (2,), generator=g))
        x = img[:, top:top + CROP, left:left + CROP].float().div_(255)
        if i % 2:
            x = x.flip(-1)
        # A colour jitter and a blur, as augmentation pipelines do, to give each sample real work.
        for _ in range(6):
            x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 3, stride=1, padding=1).squeeze(0) * 1.01
        x = (x - 0.45) / 0.225
        return x, i % 10


torch.set_num_threads(1)  # one intra-op thread: the loop's compute stays on its core
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(FakeImages(), batch_size=8, num_workers=0)
for step, (x, y) in enumerate(loader):
    if step >= STEPS:
        break
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("imagenet_like: done")
