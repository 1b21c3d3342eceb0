"""What the agent's in-process test scripts share (agent_guards.py, step_path_counts.py,
cuda_graph_steps.py): a channel that keeps the records instead of writing a FIFO, and one-line
checks that stop the script at the first failure."""
import sys


class FakeChannel:
    dead = False
    dropped = 0

    def __init__(self):
        self.steps, self.texts = [], []

    def send_step(self, t, *fields):
        self.steps.append(fields)

    def flush(self):
        pass

    def send(self, rtype, payload):
        pass

    def send_gpu(self, t, step, gpu_ns):
        pass

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


class Checks:
    def __init__(self, verbose=True):
        self.passed = 0
        self.verbose = verbose  # print the detail of passing checks too

    def __call__(self, name, cond, detail=""):
        if not cond:
            print("FAIL %s %s" % (name, detail), flush=True)
            sys.exit(1)
        self.passed += 1
        print(("ok   %s %s" % (name, detail)) if self.verbose else ("ok %s" % name), flush=True)
