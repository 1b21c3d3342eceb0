# A convolutional discriminator (DCGAN's shape, 64 images of 64x64) trained on the CPU: each step's
# activations are tens of MiB, freed at its end. Under torch.profiler glibc's heap grows by about
# that much per step although the recording itself is under 1 MiB a step: the recording's small
# blocks, allocated between the step's large ones, keep the freed space from being reused whole
# (fragmentation; the heap's free bytes, mallinfo2's fordblks, grow by what the RSS grows).
# argv: steps rss_file (each step's RSS in bytes, a line each, for the test to check that premise)
import sys

import torch
from torch import nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
rss_out = open(sys.argv[2], "w") if len(sys.argv) > 2 else None
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 64, 4, 2, 1), nn.LeakyReLU(0.2),
    nn.Conv2d(64, 128, 4, 2, 1), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
    nn.Conv2d(128, 256, 4, 2, 1), nn.BatchNorm2d(256), nn.LeakyReLU(0.2),
    nn.Conv2d(256, 512, 4, 2, 1), nn.BatchNorm2d(512), nn.LeakyReLU(0.2),
    nn.Conv2d(512, 1, 4, 1, 0), nn.Flatten())
opt = torch.optim.Adam(model.parameters(), lr=2e-4)
x = torch.randn(64, 3, 64, 64)
for step in range(steps):
    opt.zero_grad()
    model(x).mean().backward()
    opt.step()
    if rss_out:
        with open("/proc/self/statm") as f:
            rss_out.write("%d\n" % (int(f.read().split()[1]) * 4096))
        rss_out.flush()
print("done", steps)
