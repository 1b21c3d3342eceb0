"""What the agent's in-process test scripts share (agent_guards.py, step_path_counts.py,
cuda_graph_steps.py): a channel that keeps the records instead of writing a FIFO, and one-line
checks that stop the script at the first failure (tests/support/checks.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import Checks  # noqa: E402,F401  (the scripts call agent_fakes.Checks())


class FakeChannel:
    dead = False
    dropped = 0

    def __init__(self):
        self.steps, self.texts, self.gpu = [], [], []

    def send_step(self, t, *fields):
        self.steps.append(fields)

    def flush(self):
        pass

    def send(self, rtype, payload):
        pass

    def send_gpu(self, t, step, gpu_ns):
        self.gpu.append((step, gpu_ns))

    def send_text(self, kind, items):
        self.texts.append((kind, dict(items)))


def attach(torch):
    """Gives the agent a FakeChannel and installs it on `torch`, as trainscope_agent.start() and
    the import hook would; returns the channel."""
    import trainscope_agent
    from trainscope_agent import guard
    from trainscope_agent.state import S
    ch = FakeChannel()
    S.channel = ch
    guard.G.channel = ch
    trainscope_agent.on_torch(torch)
    return ch
