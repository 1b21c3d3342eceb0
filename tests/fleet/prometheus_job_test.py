"""Live, through a real Prometheus: two nodes of one job (2 x 1 gloo rank on loopback, each node under
its own `trainscope run --job-dir DIR --serve PORT` with a live-status directory of its own), Debian's
`prometheus` scraping both endpoints every second, and a PromQL query over what it recorded that
must name the slow node (its rank sleeps 50 ms per batch: --slow-node-ms).

    prometheus_job_test.py TRAINSCOPE PYTHON SOURCE_DIR

Skips (says so, exit 0 with SKIP) only where no `prometheus` binary is installed.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

TS, PY, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
check = Checks()
prom_bin = shutil.which("prometheus") or ("/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None)
if not prom_bin:
    print("SKIP prometheus_job: no prometheus binary (Debian's `prometheus` package; scripts/bootstrap installs it)")
    sys.exit(0)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(prom_port, q):
    text = get("http://127.0.0.1:%d/api/v1/query?%s" % (prom_port, urllib.parse.urlencode({"query": q})))
    d = json.loads(text)
    return d["data"]["result"] if d.get("status") == "success" else None


work = tempfile.mkdtemp(prefix="ts_prom_job_")
procs = []
try:
    ports = [free_port(), free_port()]
    prom_port = free_port()
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                "  - job_name: trainscope\n    static_configs:\n      - targets: ['127.0.0.1:%d', '127.0.0.1:%d']\n"
                % tuple(ports))
    prom = subprocess.Popen([prom_bin, "--config.file=" + os.path.join(work, "prometheus.yml"),
                             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % prom_port],
                            stdout=open(os.path.join(work, "prometheus.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(prom)
    ready = False
    for _ in range(100):
        try:
            ready = "Ready" in get("http://127.0.0.1:%d/-/ready" % prom_port, timeout=1)
        except Exception:
            ready = False
        if ready:
            break
        time.sleep(0.2)
    check("prometheus_ready", ready, open(os.path.join(work, "prometheus.log")).read()[-1000:])

    job = os.path.join(work, "job")
    master_port = free_port()
    nodes = []
    for node in range(2):
        xdg = os.path.join(work, "xdg%d" % node)  # each "host" has its own live-status directory
        os.makedirs(xdg, mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg, GLOO_SOCKET_IFNAME="lo")
        cmd = ["timeout", "240", TS, "-q", "run", "--job-dir", job, "--serve", "127.0.0.1:%d" % ports[node],
               "--no-store", "--no-profile", "--",
               PY, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", str(node),
               "--master_addr", "127.0.0.1", "--master_port", str(master_port),
               os.path.join(SRC, "examples", "ddp", "train_ddp_gloo.py"), "--steps", "200", "--dim", "64"]
        if node == 1:
            cmd += ["--slow-node-ms", "50"]
        p = subprocess.Popen(cmd, env=env, stdout=open(os.path.join(work, "node%d.log" % node), "w"),
                             stderr=subprocess.STDOUT)
        procs.append(p)
        nodes.append(p)
    codes = [p.wait(timeout=300) for p in nodes]
    for node in range(2):
        check("node%d_exit" % node, codes[node] == 0,
              "" if codes[node] == 0 else open(os.path.join(work, "node%d.log" % node)).read()[-2000:])
    host = socket.gethostname()
    slow = "%s-node1" % host

    # Both endpoints were scraped, and their training series carry job_id and node.
    up = query(prom_port, "max_over_time(up{job=\"trainscope\"}[10m])")
    check("both_targets_scraped", up is not None and len(up) == 2 and all(r["value"][1] == "1" for r in up), str(up))
    per_node = query(prom_port, "count by (job_id, node) (max_over_time(trainscope_training_steps_total[10m]))")
    check("series_labelled_job_and_node", per_node is not None and len(per_node) == 2 and
          len({r["metric"].get("job_id") for r in per_node}) == 1 and
          {r["metric"].get("node") for r in per_node} == {"%s-node0" % host, slow}, str(per_node))
    # The PromQL that names the slow node: the node whose ranks wait longest for their data.
    top = query(prom_port, "topk(1, max by (node) (max_over_time(trainscope_training_data_wait_ratio[10m])))")
    check("promql_names_slow_node", top is not None and len(top) == 1 and top[0]["metric"].get("node") == slow, str(top))
    ratio = float(top[0]["value"][1])
    fast = query(prom_port, "max by (node) (max_over_time(trainscope_training_data_wait_ratio{node!=\"%s\"}[10m]))" % slow)
    check("slow_node_waits_more", fast is not None and len(fast) == 1 and ratio > 0.3 and ratio > 3 * float(fast[0]["value"][1]),
          "slow %.2f, other %s" % (ratio, fast))
    print("PASS prometheus_job (%d checks)" % check.passed, flush=True)
finally:
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)
