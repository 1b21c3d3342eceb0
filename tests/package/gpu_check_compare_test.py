"""gpu-check's two comparisons with nvidia-smi, replayed on what the H100 recorded (tests/data/gpu_check/h100_r1/,
from ../shared/gpu-results/2026-11-27-h100/r1/logs.tar.gz; see tests/data/PROVENANCE.md).

- snapshot: the GPU dropped from boost to idle between two nvidia-smi rows 200 ms apart; the snapshot, read
  between them, matches the later row. Each reading must agree with a row on either side of the read.
- watch: under a matmul loop that was still warming up for its first ticks, trainscope and nvidia-smi read the
  same mean over the same seconds (below 90%); the check compares the two, not one with a constant.

The expectations are computed here from the recorded files with plain parsing, not from gpu_check's output.

    python3 gpu_check_compare_test.py SOURCE_DIR
"""
import csv
import json
import os
import sys
import time

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "scripts", "gpu_check"))
# nvidia-smi writes its timestamps in the host's local time; the H100 host ran on UTC (its snapshot's unix_ms,
# 15:23:05.317 UTC, falls between the rows stamped 15:23:05.216 and 15:23:05.419).
os.environ["TZ"] = "UTC"
time.tzset()
import gpu_check as gc  # noqa: E402

data = os.path.join(src, "tests", "data", "gpu_check", "h100_r1")
sys.path.insert(0, os.path.join(src, "tests", "support"))
from checks import Checks  # noqa: E402

check = Checks(verbose=False)


def read(name):
    with open(os.path.join(data, name)) as f:
        return f.read()


# ---------------------------------------------------------------------------------------------- snapshot
snap = json.loads(read("snapshot.json"))
fields = [f for f, _ in gc.SMI_FIELDS]
raw = [[v.strip() for v in r] for r in csv.reader(read("snapshot-nvidia-smi.csv").splitlines())]
check("the recorded csv has the query's columns", all(len(r) == len(fields) + 1 for r in raw), raw[:1])
t_snap = snap["unix_ms"] / 1000.0
stamps = [time.mktime(time.strptime(r[0].split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + r[0].split(".")[1])
          for r in raw]
i_after = next(i for i, t in enumerate(stamps) if t > t_snap)
before_raw, after_raw = raw[i_after - 1], raw[i_after]
col = {f: i + 1 for i, f in enumerate(fields)}
# What the GPU did: boost (1980 MHz, no reason) before the read, idle (420 MHz, GpuIdle 0x1) after it.
check("boost before", before_raw[col["clocks.sm"]] == "1980" and int(before_raw[col["clocks_event_reasons.active"]], 16) == 0)
check("idle after", after_raw[col["clocks.sm"]] == "420" and int(after_raw[col["clocks_event_reasons.active"]], 16) == 1)
g = snap["gpus"][0]
check("snapshot read idle", g["sm_clock_mhz"] == 420 and g["clock_reasons"]["bits"] == 1, g)

rows = gc.smi_csv_rows(read("snapshot-nvidia-smi.csv"), fields)
check("all rows parsed", len(rows) == len(raw), len(rows))
before, after = gc.bracketing_rows(rows, t_snap)[0]
check("bracketing rows", before["_t"] == stamps[i_after - 1] and after["_t"] == stamps[i_after],
      (before["_t"], after["_t"], stamps[i_after - 1:i_after + 1]))
res = gc.compare_snapshot(gc.snapshot_values(g), before, after)
judged = {k: e for k, e in res.items() if "agree" in e}
check("11 readings judged", len(judged) == 11, sorted(judged))
check("every reading agrees with a row beside the read", all(e["agree"] for e in judged.values()),
      {k: e for k, e in judged.items() if not e["agree"]})
check("the clock agrees with the row after only", res["sm_clock_mhz"]["agrees_with"] == "after" and
      res["sm_clock_mhz"]["nvidia_smi_before"] == "1980" and res["sm_clock_mhz"]["nvidia_smi_after"] == "420",
      res["sm_clock_mhz"])
check("the reasons agree with the row after only", res["clock_reasons_bits"]["agrees_with"] == "after",
      res["clock_reasons_bits"])
check("memory total agrees with both", res["mem_total_mib"]["agrees_with"] == "both", res["mem_total_mib"])
# The old check (the one row nearest the snapshot: 101 ms before it) misses exactly these two.
nearest = min(rows, key=lambda r: abs(r["_t"] - t_snap))
check("the nearest row is the one before", nearest is before)
near_only = gc.compare_snapshot(gc.snapshot_values(g), nearest, None)
check("nearest row alone: two misses", sorted(k for k, e in near_only.items() if e.get("agree") is False) ==
      ["clock_reasons_bits", "sm_clock_mhz"], near_only)
# A reading that matches neither row still fails.
wrong = dict(g, sm_clock_mhz=1200)
check("a clock between the two rows fails", gc.compare_snapshot(gc.snapshot_values(wrong), before, after)
      ["sm_clock_mhz"]["agree"] is False)

# ---------------------------------------------------------------------------------------------- watch
for phase in ("load", "idle"):
    jl = read("watch-%s.jsonl" % phase)
    ticks = gc.watch_ticks(jl)[0]
    mine = [json.loads(l)["gpus"][0]["util_pct"] for l in jl.splitlines() if l.startswith("{")]
    check("%s: 31 ticks" % phase, len(ticks) == len(mine) == 31, len(ticks))
    smi_raw = [[v.strip() for v in r] for r in csv.reader(read("watch-%s-nvidia-smi.csv" % phase).splitlines())]
    smi = gc.smi_csv_rows(read("watch-%s-nvidia-smi.csv" % phase), gc.WATCH_SMI_FIELDS)
    check("%s: nvidia-smi rows parsed" % phase, len(smi) == len(smi_raw))
    c = gc.compare_watch_util(ticks, smi)
    lo, hi = ticks[0][0] - 0.25, ticks[-1][0] + 0.25
    same_seconds = [float(r[2]) for r, row in zip(smi_raw, smi) if lo <= row["_t"] <= hi]
    check("%s: trainscope mean" % phase, c["trainscope_mean"] == round(sum(mine) / len(mine), 1), c)
    check("%s: nvidia-smi mean over the same seconds" % phase,
          c["nvidia_smi_mean"] == round(sum(same_seconds) / len(same_seconds), 1), (c, same_seconds))
    check("%s: agree" % phase, c["agree"] is True and c["ticks_paired"] == 31 and c["ticks_agreeing"] == 31, c)
    if phase == "load":
        # The loop warmed up for the first ticks (nvidia-smi 0, 0, 3%): both means sit under the old 90% bar.
        check("load: warm-up ticks", [float(r[2]) for r in smi_raw[:3]] == [0.0, 0.0, 3.0], smi_raw[:3])
        check("load: both at 89.5%", c["trainscope_mean"] == c["nvidia_smi_mean"] == 89.5, c)
        # A sampler that read half of what nvidia-smi read must fail.
        half = [(t, u / 2) for t, u in ticks]
        check("load: half the utilisation disagrees", gc.compare_watch_util(half, smi)["agree"] is False)
        # nvidia-smi rows from other seconds (the loop's warm-up alone) are not compared.
        check("load: other seconds left out", gc.compare_watch_util(ticks[:2], smi)["nvidia_smi_rows"] <= 3)

# ---------------------------------------------------------------------------------------------- overhead plan
plan, why = gc.overhead_plan(540, quick=True)
check("quick plan: two alternated pairs each", plan == [("mlp", 0), ("gpt", 0), ("mlp", 1), ("gpt", 1)], plan)
plan, why = gc.overhead_plan(60, quick=True)
check("too little time: none, with the reason", plan == [] and "need about" in why, (plan, why))
plan, _ = gc.overhead_plan(10000, quick=False)
check("full plan alternates", [m for m, _ in plan] == ["mlp", "gpt"] * 4, plan)
print("GPU CHECK COMPARE OK %d" % check.passed)
