"""`trainscope report DIR` on generated job directories: time and peak RSS from 8 to 1,024 ranks.

    python3 bench/job/job_merge_bench.py [TRAINSCOPE] [--repeat N] [--ranks 8,64,256,1024,4096]

Each job directory has 8 ranks per node (1,024 ranks = 128 nodes), laid out as `trainscope run
--job-dir` writes it: every node's node.json (its ranks' step table, facts, findings) beside a
report.json of 1 MiB and one profiler trace per rank of 64 MiB (sparse files: no disk, but a reader
that opened them would pay for every byte). One node is slow (its ranks wait 60 ms for data) and
one runs another PyTorch, so the merge does its whole job: straggler by node, node-mismatch.

Baselines measured in the same run: `trainscope --version` (the process alone: its peak RSS is the
floor every command pays), and the 8-rank job (ratios of time and RSS against it). Each size runs
N times (default 5), alternating sizes; medians are printed with the load average.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
ts = args.pop(0) if args and not args[0].startswith("--") else os.path.join(here, "..", "..", "build", "src", "cli", "trainscope")
repeat, sizes = 5, [8, 64, 256, 1024, 4096]
while args:
    a = args.pop(0)
    if a == "--repeat":
        repeat = int(args.pop(0))
    elif a == "--ranks":
        sizes = [int(x) for x in args.pop(0).split(",")]
    else:
        sys.exit("job_merge_bench: unknown argument " + a)
PER_NODE = 8


def make_job(root, ranks):
    nodes = max(1, ranks // PER_NODE)
    t0 = 1_700_000_000.0
    for n in range(nodes):
        name = "gpu-%03d-node%d" % (n, n)
        d = os.path.join(root, name)
        os.makedirs(d)
        slow = n == nodes // 2
        rows, traces = [], []
        for l in range(PER_NODE):
            r = n * PER_NODE + l
            wait = 60.0 if slow else 1.5
            rows.append({"rank": r, "local_rank": l, "pid": 1000 + r, "steps": 500, "step_ms": 100.0,
                         "data_wait_ms": wait, "forward_ms": 12.0, "backward_ms": 80.0 - wait, "optimizer_ms": 3.0,
                         "comm_ms": 0.0, "nonsync_ms": 18.0 + wait, "sync_ms": 80.0 - wait, "rss_max_bytes": 6.2e9,
                         "step_ends": [[s, t0 + s * 0.1] for s in (2, 5, 10, 20, 50, 100, 200)]})
            tr = "trace_rank%d.pt.trace.json" % r
            traces.append(tr)
            with open(os.path.join(d, tr), "wb") as f:  # 64 MiB, sparse, a well-formed end
                f.seek(64 * 2**20 - 2)
                f.write(b"}\n")
        m = {"schema": "trainscope.node/1", "state": "finished", "host": "gpu-%03d" % n, "node": name, "node_rank": n,
             "node_rank_source": "SLURM_NODEID",
             "job": {"key": "slurm:4242", "slurm_job_id": "4242", "rdzv_id": "4242", "master_addr": "gpu-000",
                     "master_port": "29500", "nnodes": nodes},
             "world_size": nodes * PER_NODE, "local_world_size": PER_NODE, "trainscope_pid": 4000 + n,
             "command": "torchrun --nnodes %d --nproc-per-node 8 train.py" % nodes, "started_unix": t0,
             "updated_unix": t0 + 60, "ended_unix": t0 + 60, "exit": {"code": 0, "signal": 0, "cause": ""},
             "facts": {"python_version": "3.11.9", "torch_version": "2.4.0" if n != 3 else "2.3.1",
                       "cuda_version": "12.4", "nccl_version": "2.20.5", "driver_version": "550.54.15",
                       "gpu_model": "NVIDIA H100 80GB HBM3", "gpus": 8, "cpu_cores": 192, "cpu_budget_cores": 192,
                       "shm_total_bytes": 1.0e12},
             "evidence": {"host_cpu_mean_pct": 35.0, "process_tree_cpu_mean_pct": 800.0, "gpu_util_mean_pct": 90.0,
                          "throttled_pct": 0.0, "throttle_reasons": "", "threads_oversubscribed": False,
                          "threads_summary": "", "loader": "num_workers=%d batch_size=32 pin_memory=True" % (1 if slow else 8),
                          "findings": [{"id": "dataloader-starvation" if slow else "compute-bound", "severity": "high" if slow else "info",
                                        "title": "Training loop waiting for data" if slow else "GPU-bound",
                                        "recoverable_fraction": 0.5 if slow else 0.0}]},
             "ranks": rows, "report": "report.json", "traces": traces,
             "trace_bytes": [64 * 2**20] * len(traces)}  # as `run` records them: the merge stats, never reads
        with open(os.path.join(d, "node.json"), "w") as f:
            json.dump(m, f, indent=2)
        with open(os.path.join(d, "report.json"), "w") as f:  # 1 MiB the merge must not read
            f.write('{"schema": "trainscope.report/2", "pad": "' + "x" * (2**20) + '"}\n')
    return nodes


def measure(cmd):
    """Wall seconds and the command's peak RSS in MiB, as GNU time reports it. Not wait4's ru_maxrss
    of a child forked from this Python: the fork's copy of the interpreter counts in the child's high
    water mark before it execs (18 MiB here, more than the merge itself)."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kib %M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("job_merge_bench: %s failed: %s" % (" ".join(cmd), r.stderr[-500:]))
    kib = [l for l in r.stderr.splitlines() if l.startswith("maxrss_kib ")][-1].split()[1]
    return wall, int(kib) / 1024.0


if not os.access("/usr/bin/time", os.X_OK):
    sys.exit("job_merge_bench: needs GNU time (/usr/bin/time, Debian package `time`, in scripts/bootstrap)")
root = tempfile.mkdtemp(prefix="ts_job_bench_")
try:
    dirs = {}
    for r in sizes:
        dirs[r] = os.path.join(root, "job%d" % r)
        os.makedirs(dirs[r])
        make_job(dirs[r], r)
    res = {r: [] for r in sizes}
    floor = []
    for _ in range(repeat):
        floor.append(measure([ts, "--version"]))
        for r in sizes:
            res[r].append(measure([ts, "-q", "report", dirs[r], "--json"]))
    load = os.getloadavg()
    fw = statistics.median(x[0] for x in floor)
    fr = statistics.median(x[1] for x in floor)
    print("trainscope report DIR --json, generated job directories (8 ranks per node), median of %d runs; "
          "load average %.2f %.2f %.2f; %d cores" % (repeat, load[0], load[1], load[2], os.cpu_count()))
    print("baseline `trainscope --version`: %.1f ms, peak RSS %.1f MiB" % (fw * 1e3, fr))
    base = sizes[0]
    bw = statistics.median(x[0] for x in res[base])
    br = statistics.median(x[1] for x in res[base])
    print("%6s %6s %10s %8s %12s %8s %16s" % ("ranks", "nodes", "time ms", "x %d" % base, "peak RSS MiB", "x %d" % base,
                                              "KiB/rank > floor"))
    for r in sizes:
        w = statistics.median(x[0] for x in res[r])
        m = statistics.median(x[1] for x in res[r])
        print("%6d %6d %10.1f %8.2f %12.1f %8.2f %16.1f" % (r, max(1, r // PER_NODE), w * 1e3, w / bw, m, m / br,
                                                           (m - fr) * 1024 / r))
finally:
    shutil.rmtree(root, ignore_errors=True)
