"""The profiler window's memory budget in torch.multiprocessing.spawn's ranks
(agent/trainscope_agent/profiler_window.py): spawn sets no LOCAL_WORLD_SIZE, yet its ranks profile
the same steps at once on one host, so each must take its share. Real spawned interpreters read
their share; the budget cap is lifted (TRAINSCOPE_WINDOW_MIB) so the host's available memory
decides it. Prints SPAWNED BUDGET OK."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from trainscope_agent import profiler_window as pw  # noqa: E402


def report(i, q):
    q.put((i, pw._local_ranks(), pw._budgets()[0]))


def available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024


def main():
    for name in ("LOCAL_WORLD_SIZE", pw.LOCAL_PROCS_ENV):
        os.environ.pop(name, None)
    os.environ["TRAINSCOPE_WINDOW_MIB"] = "100000000"
    pw.spawned_ranks_share(torch)
    pw.spawned_ranks_share(torch)  # armed twice (a second window): one wrapper, not two
    assert pw._local_ranks() == 1
    inner = sys.modules["torch.multiprocessing.spawn"].start_processes
    assert inner.__wrapped__.__name__ == "start_processes" and not hasattr(inner.__wrapped__, "__wrapped__")

    # mp.spawn, positional nprocs inside: two spawned interpreters, each a half of the budget.
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(report, args=(q,), nprocs=2, join=True)
    got = sorted(q.get() for _ in range(2))
    want = available() // 16 // 2
    for i, n, budget in got:
        assert n == 2, got
        assert abs(budget - want) < 0.2 * want, (got, want)

    # start_processes called by the user, nprocs by keyword (fork: the env it set is the child's).
    os.environ.pop(pw.LOCAL_PROCS_ENV, None)
    q = mp.get_context("fork").SimpleQueue()
    mp.start_processes(report, args=(q,), nprocs=3, start_method="fork")
    got = sorted(q.get() for _ in range(3))
    assert [n for _, n, _ in got] == [3, 3, 3], got

    # One process (nprocs=1) shares with nobody: the environment is left as it was.
    os.environ.pop(pw.LOCAL_PROCS_ENV, None)
    mp.start_processes(report, args=(q,), nprocs=1, start_method="fork")
    assert q.get()[1] == 1 and pw.LOCAL_PROCS_ENV not in os.environ
    print("SPAWNED BUDGET OK")


if __name__ == "__main__":
    main()
