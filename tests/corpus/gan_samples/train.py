"""A small GAN: generator and discriminator with an optimizer each, and a checkpoint (both models
and both optimizers' states) saved after every iteration (torch.save) - the time goes there."""
# expect: top in-loop-io
# expect: absent memory-growth
import os
import sys
import tempfile

import torch
import torch.nn as nn

# One intra-op thread, as a small CPU GAN is often run: the case runs beside another in CI, and a
# 2-thread pool's many small parallel regions stall whenever the other case takes a core, so the load,
# not the script, would decide how the step's compute weighs against its save (5-50% measured).
torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
z_dim, x_dim = 64, 256
G = nn.Sequential(nn.Linear(z_dim, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, x_dim))
D = nn.Sequential(nn.Linear(x_dim, 512), nn.LeakyReLU(0.2), nn.Linear(512, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
snap = os.path.join(tempfile.mkdtemp(prefix="corpus-gan-"), "G.pt")
for it in range(steps):
    real = torch.randn(16, x_dim) * 0.5 + 1.0
    fake = G(torch.randn(16, z_dim))
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(fake), torch.ones(16, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    torch.save({"G": G.state_dict(), "D": D.state_dict(), "opt_g": opt_g.state_dict(),  # expect-site: in-loop-io
                "opt_d": opt_d.state_dict()}, snap)
print("done", d_loss.item(), g_loss.item())
