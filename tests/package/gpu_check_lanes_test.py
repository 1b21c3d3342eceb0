"""gpu-check's lane plan (scripts/gpu_check/lanes.py) and the pinning of a lane's commands, on this machine.

- The plan for one 10-minute device command (--budget 540) on the H100 host's 16 cores: the stages that measure
  time alone, examples and torch2-eager in lane 1 beside torch2-compile in lane 2, all within the budget; a
  smaller budget skips the least valuable stages with the seconds they need; a machine with too few cores for
  the examples' lane runs every stage alone and says why.
- A command a lane runs is pinned to that lane's cores (taskset): the child reads its own affinity.
- Who shared the GPU: stages whose run times overlap, and only those.

    python3 gpu_check_lanes_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "scripts", "gpu_check"))
import gpu_check as gc  # noqa: E402
import lanes  # noqa: E402

sys.path.insert(0, os.path.join(src, "tests", "support"))
from checks import Checks  # noqa: E402

check = Checks(verbose=False)


# The H100 host: 16 cores, every stage in 540 s.
p = lanes.plan(lanes.ORDER, 540, list(range(16)))
check("16 cores: phases", p.phases == [("alone", "env"), ("alone", "snapshot"), ("alone", "watch"),
                                       ("alone", "overhead"),
                                       ("beside", {1: ["examples", "torch2-eager"], 2: ["torch2-compile"]}),
                                       ("alone", "lab"), ("alone", "max-batch")], p.phases)
check("16 cores: lane cores", p.lanes == (list(range(12)), [12, 13, 14, 15]), p.lanes)
check("16 cores: nothing skipped, within the budget", not p.skipped and p.total_s <= 540 - lanes.RESERVE_S,
      (p.skipped, p.total_s))
# Estimated time = the alone stages one after another + the longer lane.
est = lanes.ESTIMATE_S
alone = sum(est[n] for n in ("env", "snapshot", "watch", "overhead", "lab", "max-batch"))
check("16 cores: total", p.total_s == alone + max(est["examples"] + est["torch2-eager"], est["torch2-compile"]),
      p.total_s)
check("16 cores: described", p.describe().startswith(
    "env, snapshot, watch, overhead alone; then lane 1 (cores 0-11): examples, torch2-eager beside lane 2 "
    "(cores 12-15): torch2-compile; then lab, max-batch alone"), p.describe())
# A 5-minute budget: what does not fit is skipped, each with the seconds it needs; what runs still fits.
p = lanes.plan(lanes.ORDER, 300, list(range(16)))
check("300 s: within", p.total_s <= 300 - lanes.RESERVE_S, p.total_s)
check("300 s: the least valuable go", "max-batch" in p.skipped and "lab" in p.skipped and "env" not in p.skipped,
      p.skipped)
check("300 s: reason", all("needs about %d s" % est[n] in why and "--stage %s" % n in why
                           for n, why in p.skipped.items()), p.skipped)
check("300 s: ran + skipped = all", sorted(list(p.stages()) + list(p.skipped)) == sorted(lanes.ORDER))
# Two cores (this VM): lane 1 would get one core, too few for the examples' DataLoader workers.
p = lanes.plan(lanes.ORDER, None, [0, 1])
check("2 cores: no lanes", p.lanes is None and all(k == "alone" for k, _ in p.phases), p.phases)
check("2 cores: says why", "no lanes: 2 usable core(s); lane 1 needs 4" in p.describe(), p.describe())
check("no taskset: says so", "no lanes: no taskset here" in lanes.plan(lanes.ORDER, None, []).describe())
check("core lists", lanes.core_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8")
check("shared_with", lanes.shared_with({"a": (0, 10, True), "b": (5, 20, False), "c": (20, 30, False)}) ==
      {"a": ["b"], "b": ["a"], "c": []})

# Pinning: a Stage in lane 2 on this machine's last core runs its command there.
cores = sorted(os.sched_getaffinity(0))
if shutil.which("taskset") and len(cores) >= 2:
    class Ctx:
        pass
    ctx = Ctx()
    ctx.logs = tempfile.mkdtemp(prefix="ts-lanes-")
    ctx.t0 = time.monotonic()
    ctx.deadline = ctx.t0 + 60
    ctx.taskset = shutil.which("taskset")
    st = gc.Stage("lanes-test", ctx, lane="2", cores=[cores[-1]])
    rc, out = st.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], "affinity.txt",
                     timeout=30)
    check("pinned to the lane's core", rc == 0 and out.strip() == str([cores[-1]]), (rc, out))
    rec = st.record()
    check("record: lane and cores", rec["lane"] == "2" and rec["cores"] == str(cores[-1]), rec)
    st = gc.Stage("alone-test", ctx)
    rc, out = st.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], "all.txt",
                     timeout=30)
    check("alone: every core", out.strip() == str(cores), out)
    shutil.rmtree(ctx.logs)
else:
    print("note: pinning not tried (taskset missing or one core)")
print("GPU CHECK LANES OK %d" % check.passed)
