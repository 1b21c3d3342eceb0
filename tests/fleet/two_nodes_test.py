"""Two hosts on one machine: a real 2-node x 2-rank DDP job (gloo, CPU) with every node under its own
`trainscope run --job-dir DIR`, then `trainscope report DIR` must name the slow node, its ranks and why.

    two_nodes_test.py TRAINSCOPE PYTHON SOURCE_DIR

The two nodes are two network namespaces joined by a veth pair, each with its own address
(10.241.N.1/24 ... : `ip netns`, `ip link add ... type veth`, iproute2), and torchrun's static
rendezvous and gloo run over the veth (GLOO_SOCKET_IFNAME). Both namespaces share the host name (no
UTS namespace), so the node folders must be told apart by node rank. Node 1's ranks sleep 60 ms in
every batch (--slow-node-ms): the slow node. Where namespaces cannot be made (not root, no
CAP_NET_ADMIN, no iproute2) the test says so and runs the two torchrun node agents on loopback
(TS_TWO_NODES_LOOPBACK=1 asks for that path).
Each rank also measures its own step and data wait (--report-dir): trainscope's numbers are checked
against them. Then the job directory is damaged the ways a real one is (a node missing, a trace cut
off mid-write) and the report must say so in one line and still report what is there.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

TS, PY, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
check = Checks()
work = tempfile.mkdtemp(prefix="ts_two_nodes_")
tag = "%05d" % (os.getpid() % 100000)
ns = ["tsn%s0" % tag, "tsn%s1" % tag]
veth = ["tsv%sa" % tag, "tsv%sb" % tag]  # interface names: at most 15 characters
subnet = "10.241.%d" % (os.getpid() % 200 + 20)
addr = [subnet + ".1", subnet + ".2"]
made = []


def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def cleanup():
    for n in made:
        sh("ip", "netns", "del", n)
    shutil.rmtree(work, ignore_errors=True)


def make_namespaces():
    """Two namespaces and a veth pair between them; '' when done, else why not."""
    if not shutil.which("ip"):
        return "no `ip` command (iproute2 is not installed)"
    for n in ns:
        r = sh("ip", "netns", "add", n)
        if r.returncode != 0:
            return "ip netns add: " + (r.stderr.strip() or "failed")
        made.append(n)
    steps = [("ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1])]
    for i in range(2):
        steps += [("ip", "link", "set", veth[i], "netns", ns[i]),
                  ("ip", "-n", ns[i], "addr", "add", addr[i] + "/24", "dev", veth[i]),
                  ("ip", "-n", ns[i], "link", "set", veth[i], "up"),
                  ("ip", "-n", ns[i], "link", "set", "lo", "up"),
                  ("ip", "netns", "exec", ns[i], "true")]  # exec remounts /sys: a container may refuse
    for s in steps:
        r = sh(*s)
        if r.returncode != 0:
            return " ".join(s) + ": " + (r.stderr.strip() or "failed")
    r = subprocess.run(["ip", "netns", "exec", ns[1], "ping", "-c", "1", "-W", "2", addr[0]], capture_output=True,
                       text=True, timeout=30) if shutil.which("ping") else None
    if r is not None and r.returncode != 0:
        return "the veth pair does not carry packets: " + (r.stdout + r.stderr).strip()[-200:]
    return ""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


try:
    if os.environ.get("TS_TWO_NODES_LOOPBACK"):  # to run the fallback itself
        why = "TS_TWO_NODES_LOOPBACK is set"
    else:
        why = make_namespaces() if os.geteuid() == 0 else "not root: network namespaces need CAP_NET_ADMIN"
    netns = why == ""
    if netns:
        print("two_nodes: two network namespaces %s (%s) and %s (%s) joined by a veth pair" % (ns[0], addr[0], ns[1], addr[1]),
              flush=True)
        master = addr[0]
    else:
        print("two_nodes: network namespaces unavailable (%s): falling back to two torchrun node agents on loopback" % why,
              flush=True)
        master = "127.0.0.1"
    xdg = os.path.join(work, "xdg")
    os.makedirs(xdg, mode=0o700)

    def start_job(job, steps, tag, env_job_dir=False):
        """Both nodes of one job; node 1 slow. env_job_dir: node 1 gets TRAINSCOPE_JOB_DIR, not --job-dir."""
        port = free_port()
        procs = []
        for node in range(2):
            env = dict(os.environ, XDG_RUNTIME_DIR=xdg, GLOO_SOCKET_IFNAME=veth[node] if netns else "lo")
            where = ["--job-dir", job]
            if env_job_dir and node == 1:
                env["TRAINSCOPE_JOB_DIR"], where = job, []
            cmd = ["timeout", "240", TS, "-q", "run"] + where + ["--no-store", "--profile-steps", "3-5", "--",
                   PY, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "2", "--node_rank", str(node),
                   "--master_addr", master, "--master_port", str(port),
                   os.path.join(SRC, "examples", "ddp", "train_ddp_gloo.py"), "--steps", str(steps),
                   "--report-dir", os.path.join(work, "own" + tag)]
            if node == 1:
                cmd += ["--slow-node-ms", "60"]
            if netns:
                cmd = ["ip", "netns", "exec", ns[node]] + cmd
            out = open(os.path.join(work, "node%d%s.log" % (node, tag)), "w")
            procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT))
        return procs, port

    job = os.path.join(work, "job")
    procs, port = start_job(job, 30, "", env_job_dir=True)
    # While it runs, each node's manifest says so.
    running = set()
    while any(p.poll() is None for p in procs) and len(running) < 2:
        for n in (os.listdir(job) if os.path.isdir(job) else []):
            try:
                if json.load(open(os.path.join(job, n, "node.json")))["state"] == "running":
                    running.add(n)
            except (OSError, ValueError):
                pass
        time.sleep(0.1)
    check("manifests_say_running", len(running) == 2, str(running))
    codes = [p.wait(timeout=300) for p in procs]
    for node in range(2):
        log = open(os.path.join(work, "node%d.log" % node)).read()
        check("node%d_exit" % node, codes[node] == 0, "exit %d" % codes[node] + ("" if codes[node] == 0 else "\n" + log[-3000:]))

    host = socket.gethostname()
    names = sorted(os.listdir(job))
    check("node_folders", names == ["%s-node0" % host, "%s-node1" % host], str(names))
    manifests = [json.load(open(os.path.join(job, n, "node.json"))) for n in names]
    for i, m in enumerate(manifests):
        check("node%d_finished" % i, m["state"] == "finished" and m["node_rank"] == i, "%s %s" % (m["state"], m["node_rank"]))
        check("node%d_rank_source" % i, m["node_rank_source"] == "torchrun --node-rank", m["node_rank_source"])
        check("node%d_job_key" % i, m["job"]["key"] == "master:%s:%d" % (master, port), m["job"]["key"])
        check("node%d_ranks" % i, sorted(r["rank"] for r in m["ranks"]) == [2 * i, 2 * i + 1],
              str([r["rank"] for r in m["ranks"]]))
        check("node%d_report_written" % i, os.path.exists(os.path.join(job, names[i], "report.json")))
        check("node%d_expects_2_nodes_4_ranks" % i, m["job"]["nnodes"] == 2 and m["world_size"] == 4,
              "%s %s" % (m["job"]["nnodes"], m["world_size"]))

    # The ranks' own measurements (each rank's median data wait after 2 warm-up steps).
    own = {}
    for r in range(4):
        d = json.load(open(os.path.join(work, "own", "rank%d.json" % r)))
        w = sorted(d["data_wait_s"][2:])
        own[r] = 1000 * w[len(w) // 2]
    check("own_slow_node_waits", own[2] > 55 and own[3] > 55 and own[0] < 30 and own[1] < 30, str(own))

    r = subprocess.run([TS, "report", job, "--json"], capture_output=True, text=True, timeout=120)
    check("report_json_exit", r.returncode == 0, r.stderr[-2000:])
    rep = json.loads(r.stdout)
    jb = rep["job"]
    slow_node = "%s-node1" % host
    check("report_no_problems", jb["problems"] == [], str(jb["problems"]))
    check("report_slowest_node", jb["slowest_node"] == slow_node and jb["slowest_rank"] in (2, 3),
          "%s rank %s" % (jb["slowest_node"], jb["slowest_rank"]))
    check("report_gain", jb["fixed_speedup"] > 1.5 and jb["fixed_step_ms"] < jb["step_ms"],
          "%.2fx %.1f -> %.1f ms" % (jb["fixed_speedup"], jb["step_ms"], jb["fixed_step_ms"]))
    rows = {x["rank"]: x for x in rep["ranks"]}
    check("report_rank_nodes", sorted(rows) == [0, 1, 2, 3] and all(rows[k]["node"] == names[k // 2] for k in rows),
          str({k: rows[k]["node"] for k in rows}))
    for k in (2, 3):
        check("report_rank%d_data_wait_vs_own" % k, abs(rows[k]["data_wait_ms"] - own[k]) < 0.15 * own[k] + 3,
              "trainscope %.1f ms, own %.1f ms" % (rows[k]["data_wait_ms"], own[k]))
    for k in (0, 1):
        check("report_rank%d_waits_in_collectives" % k, rows[k]["wait_ms"] > 0.5 * own[2],
              "%.1f ms (node 1's data wait %.1f ms)" % (rows[k]["wait_ms"], own[2]))
    strag = [f for f in rep["findings"] if f["id"] == "straggler-rank"]
    check("finding_straggler", len(strag) == 1, str([f["id"] for f in rep["findings"]]))
    f = strag[0]
    ev = {e["name"]: e["value"] for e in f["evidence"]}
    check("finding_names_node_and_ranks", ("node %s is slow: 2 of its 2 ranks lag (2, 3)" % slow_node) in f["title"], f["title"])
    check("finding_names_node_ranks", ev.get("straggler_node_slow_ranks") == 2 and ev.get("straggler_node_rank") == 1,
          str(ev))
    check("finding_cause_data", "straggler_extra_data_ms" in ev and "data" in f["fix"], f["fix"][:200])

    txt = subprocess.run([TS, "report", job], capture_output=True, text=True, timeout=120, env=dict(os.environ, COLUMNS="160"))
    ok = txt.returncode == 0 and ("at the pace of node %s" % slow_node) in txt.stdout and "<- straggler" in txt.stdout
    check("report_text", ok, "" if ok else txt.stdout[-3000:])
    print(txt.stdout[:txt.stdout.find("FINDINGS")], flush=True)  # the JOB part, for the log
    html = subprocess.run([TS, "report", job, "--html"], capture_output=True, text=True, timeout=120)
    check("report_html", html.returncode == 0 and ("<td>%s</td>" % slow_node) in html.stdout and "id=\"preface\"" in html.stdout)

    an = subprocess.run([TS, "-q", "analyze", job, "--json"], capture_output=True, text=True, timeout=300)
    check("analyze_job_dir", an.returncode == 0, an.stderr[-1000:])
    a = json.loads(an.stdout)
    check("analyze_four_traces", len(a["traces"]) == 4 and len(a["ranks"]) == 4, "%d traces" % len(a["traces"]))

    # A node that dies: node 1's trainscope is killed (SIGKILL, no report) once its heartbeat has
    # its ranks' first ten steps (rewritten each second early in a job); the training itself goes on
    # to the end. Its last node.json must still count.
    dead_job = os.path.join(work, "dead")
    procs2, _ = start_job(dead_job, 100, "dead")
    victim = None
    deadline = time.time() + 120
    while time.time() < deadline and victim is None and all(p.poll() is None for p in procs2):
        try:
            m1 = json.load(open(os.path.join(dead_job, "%s-node1" % host, "node.json")))
            if len(m1["ranks"]) == 2 and all(r["steps"] >= 10 for r in m1["ranks"]):
                victim = m1["trainscope_pid"]
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    check("heartbeat_with_ranks", victim is not None, "node 1 wrote no heartbeat with its ranks")
    os.kill(victim, signal.SIGKILL)
    codes2 = [p.wait(timeout=300) for p in procs2]
    check("survivor_finishes", codes2[0] == 0 and codes2[1] != 0, str(codes2))
    r = subprocess.run([TS, "report", dead_job, "--json"], capture_output=True, text=True, timeout=120)
    ok = r.returncode == 0 and ("node %s-node1: stopped writing" % host) in r.stderr
    check("dead_node_reported", ok, r.stderr[-800:])
    d = json.loads(r.stdout)
    check("dead_node_numbers_kept", sorted(x["rank"] for x in d["ranks"]) == [0, 1, 2, 3] and
          d["job"]["slowest_node"] == slow_node, "%s %s" % ([x["rank"] for x in d["ranks"]], d["job"]["slowest_node"]))
    check("dead_node_left_no_report", not os.path.exists(os.path.join(dead_job, "%s-node1" % host, "report.json")))

    # Damaged copies: what is there is still reported, each problem in one line.
    lost = os.path.join(work, "lost")
    shutil.copytree(job, lost)
    shutil.rmtree(os.path.join(lost, names[1]))
    r = subprocess.run([TS, "report", lost, "--json"], capture_output=True, text=True, timeout=120)
    check("missing_node_reported", r.returncode == 0 and "node 1 of 2 missing" in r.stderr and
          len(json.loads(r.stdout)["ranks"]) == 2, r.stderr[-500:])
    cut = os.path.join(work, "cut")
    shutil.copytree(job, cut)
    trace = os.path.join(cut, names[1], manifests[1]["traces"][0])
    size = os.path.getsize(trace)
    with open(trace, "r+b") as t:
        t.truncate(size // 2)
    r = subprocess.run([TS, "report", cut], capture_output=True, text=True, timeout=120)
    check("cut_trace_reported", r.returncode == 0 and "cut off" in r.stderr and slow_node in r.stdout, r.stderr[-500:])
    an = subprocess.run([TS, "analyze", cut, "--json"], capture_output=True, text=True, timeout=300)
    check("cut_trace_left_out_by_analyze", an.returncode == 0 and "cut off" in an.stderr and
          len(json.loads(an.stdout)["traces"]) == 3, an.stderr[-500:])
    print("PASS two_nodes (%s, %d checks)" % ("network namespaces" if netns else "loopback fallback", check.passed),
          flush=True)
finally:
    cleanup()
