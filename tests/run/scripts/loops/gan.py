# A GAN loop (the shape of PyTorch's DCGAN example, small MLPs on random data): per iteration the
# discriminator steps on real and fake batches (two backward), then the generator (one backward):
# two optimizers, one step per loop iteration.
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import _count

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
netD = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
criterion = nn.BCEWithLogitsLoss()
optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
loader = DataLoader(TensorDataset(torch.randn(16 * 30, 16)), batch_size=16)
for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
    for (real,) in loader:
        b = real.size(0)
        netD.zero_grad()
        errD_real = criterion(netD(real), torch.ones(b, 1))
        errD_real.backward()
        fake = netG(torch.randn(b, 8))
        errD_fake = criterion(netD(fake.detach()), torch.zeros(b, 1))
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        errG = criterion(netD(fake), torch.ones(b, 1))
        errG.backward()
        optG.step()
        _count.step()
