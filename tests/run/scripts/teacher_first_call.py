# Distillation: a frozen teacher (eval mode, larger than the student) runs on each training batch
# under no_grad. Its first call is slow (a lazy set-up: 0.5 s here, as a first call's allocations
# and kernel choices are) and comes before the agent has chosen the model the loop trains. That
# call is the step's own inference, not an evaluation.
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 4))
        self.ready = False

    def forward(self, x):
        if not self.ready:
            time.sleep(0.5)
            self.ready = True
        return self.net(x)


teacher = Teacher().eval()
student = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(student.parameters(), lr=0.05)
for step in range(30):
    x = torch.randn(16, 32)
    with torch.no_grad():
        soft = F.softmax(teacher(x), dim=-1)
    loss = F.kl_div(F.log_softmax(student(x), dim=-1), soft, reduction="batchmean")
    opt.zero_grad()
    loss.backward()
    opt.step()
