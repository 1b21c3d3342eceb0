"""scripts/gpu-report on results shaped like a GPU machine's, before one has run it here.

Stand-in, said plainly: this machine has no GPU, so the two results folders are written by this test
in the shapes scripts/gpu_check/gpu_check.py records (its Stage.record() and each stage's data), with
made-up readings. The traces in them are real: public traces from tests/data, under the names of the
examples. What is checked: the folders merge (a stage a later run only skipped keeps its earlier
record), every section carries its figures, and --import-traces takes exactly the traces whose
`analyze` puts the example's planted finding first, writes their manifest and provenance rows, and
says why it left the others out. CI runs gpu-check's real no-GPU results through it as well
(gpu_check_test.sh).

    python3 gpu_report_test.py TRAINSCOPE_BINARY SOURCE_DIR
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

ts, src = sys.argv[1], sys.argv[2]
data = os.path.join(src, "tests", "data")
tmp = tempfile.mkdtemp(prefix="ts-gpu-report-")
STARVED = "tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"  # DataLoader-starved ResNet-50
FIXED = "tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz"    # fp32 GEMMs first
ALEXNET = "hta_critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"  # has cuda_sync events


def rec(status, data, found=(), skipped=(), failed=()):
    return {"status": status, "duration_s": 12.5, "found": list(found), "skipped": list(skipped),
            "failed": list(failed), "data": data}


def summary(stages):
    return {"schema": "trainscope.gpu-check/1", "updated_unix": 1790000000, "bundle": "/tmp/b",
            "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "driver": "580.95.05", "uuid": "GPU-x"}],
            "python": {"path": "/usr/bin/python3", "torch": "2.11.0+cu130", "cuda": True, "cuda_version": "13.0"},
            "stages": stages, "overall": "pass"}


def write(folder, s, traces=()):
    os.makedirs(folder)
    json.dump(s, open(os.path.join(folder, "summary.json"), "w"))
    if traces:
        with tarfile.open(os.path.join(folder, "traces-examples.tar"), "w") as t:
            for group, name in traces:
                t.add(os.path.join(data, name), arcname="%s/trace.json.gz" % group)


env = rec("pass", {"trainscope_version": "trainscope 0.1.0", "buildinfo": {"commit": "abc1234"},
                   "host": {"kernel": "6.8.0", "glibc": "glibc 2.35", "cpus": 16}})
snap = rec("pass", {"same_second": True, "nvidia_smi_minus_snapshot_ms": [-87], "gpus": [{
    "index": 0, "name": "NVIDIA H100 80GB HBM3",
    "fields": {"mem_used_mib": {"nvidia_smi": "1", "trainscope": 1.0, "diff": 0.0, "agree": True},
               "power_w": {"nvidia_smi": "71.3", "trainscope": 70.9, "diff": -0.4, "agree": True}},
    "gpm": {"sm_active_pct": 0.0, "tensor_active_pct": 0.0, "supported": True}, "clock_reasons": ["gpu_idle"]}]})
watch = rec("pass", {"load": {"ticks": 30, "seconds": 15, "trainscope_cpu_ms_per_tick": 0.412,
                              "trainscope_mean": {"util_pct": 100.0, "sm_active_pct": 97.3, "tensor_active_pct": 88.1,
                                                  "power_w": 690.2},
                              "nvidia_smi_util_mean": 100.0, "recorded_rows": {"gpu_samples": 30, "host_samples": 30},
                              "matmul": "MATMUL bf16 8192 TFLOP/s=612"},
                     "idle": {"ticks": 30, "seconds": 15, "trainscope_cpu_ms_per_tick": 0.398,
                              "trainscope_mean": {"util_pct": 0.0, "sm_active_pct": 0.1, "tensor_active_pct": 0.0},
                              "nvidia_smi_util_mean": 0.0, "recorded_rows": {"gpu_samples": 30, "host_samples": 30}}})
lab = rec("pass", {"lab": {"device_name": "NVIDIA H100 80GB HBM3", "target": "tiny_convnet.py:factory", "configs": [
    {"name": "fp32", "status": "ok", "batch_size": 64, "step_ms_median": 9.75, "samples_per_s": 6564.1},
    {"name": "bf16", "status": "ok", "batch_size": 64, "step_ms_median": 5.5, "samples_per_s": 11636.4}],
    "ratios": {"bf16_vs_fp32": 1.77, "compile_vs_bf16": None, "compile_vs_fp32": None}}})
maxb = rec("pass", {"max_batch": {"target": "tiny_convnet.py:wide_activations", "max_batch": 4096,
                                  "recommended_batch": 3686, "capacity_bytes": 85520809984}})
first = {"env": env, "snapshot": snap, "watch": watch, "lab": lab, "max-batch": maxb,
         "examples": rec("skipped", {}, skipped=["examples: the run's --budget is spent"])}
examples = rec("fail", {"examples": [
    {"example": "data_starved.py", "expected": "dataloader-starvation", "exit": 0, "ok": True,
     "findings": ["dataloader-starvation"], "step_ms_median": 41.2, "steps": 60, "cuda_sync_events": 0},
    {"example": "host_sync.py", "expected": "host-sync", "exit": 0, "ok": True, "findings": ["host-sync"],
     "step_ms_median": 3.1, "steps": 200, "cuda_sync_events": 12},
    {"example": "launch_bound.py", "expected": "launch-bound", "exit": 0, "ok": False, "findings": ["gpu-idle"],
     "step_ms_median": 2.0, "steps": 300},
    {"example": "healthy.py", "expected": None, "exit": 0, "ok": True, "findings": [], "step_ms_median": 8.0,
     "steps": 100}], "trace_tars": ["traces-examples.tar"]},
    found=["data_starved.py: top finding dataloader-starvation"], failed=["launch_bound.py: top finding gpu-idle"])
torch2 = rec("pass", {"cases": [{"case": "compile_default", "exit_plain": 0, "exit_trainscope": 0, "same_losses": True,
                                 "max_rel_loss_diff": 0.0, "ok": True,
                                 "plain": {"dynamo": {"graph_breaks": 1, "unique_graphs": 2}},
                                 "trainscope": {"dynamo": {"graph_breaks": 1, "unique_graphs": 2}}}]})
overhead = rec("pass", {"mlp": {"plain_ms": [5.012, 5.020], "trainscope_ms": [5.031, 5.019], "overhead_pct": 0.18}})
second = {"env": rec("skipped", {}, skipped=["env: the run's --budget is spent"]), "examples": examples,
          "torch2-compile": torch2, "overhead": overhead}

r1, r2 = os.path.join(tmp, "r1"), os.path.join(tmp, "r2")
write(r1, summary(first))
write(r2, summary(second), [("data_starved", STARVED), ("host_sync", ALEXNET), ("healthy", FIXED)])
dd = os.path.join(tmp, "data")
os.makedirs(dd)
shutil.copy(os.path.join(data, "PROVENANCE.md"), dd)
doc = os.path.join(tmp, "GPU.md")
p = subprocess.run([os.path.join(src, "scripts", "gpu-report"), r1, r2, "--doc", doc, "--import-traces",
                    "--data-dir", dd, "--trainscope", ts, "--json"], capture_output=True, text=True)
ok = [0]


def check(name, cond, detail=""):
    if not cond:
        print("FAIL %s %s" % (name, detail))
        print(p.stdout, p.stderr)
        sys.exit(1)
    ok[0] += 1


check("exit 0", p.returncode == 0, p.stderr)
text = open(doc).read()
res = json.loads(p.stdout)
check("machine", "| GPU | NVIDIA H100 80GB HBM3 (GPU 0) |" in text and "| driver | 580.95.05 |" in text, text[:600])
check("torch", "2.11.0+cu130 (CUDA 13.0)" in text)
check("merge keeps the earlier env", "trainscope 0.1.0, commit abc1234" in text)
check("merge takes the later examples", "| examples | fail |" in text)
check("snapshot rows", "| power_w | 71.3 | 70.9 | -0.4 | yes |" in text)
check("watch under load", "| load | 15 | 30 | 100.0 | 100.0 | 97.3 | 88.1 | 690.2 | 0.412 |" in text)
check("example rows", "| launch_bound.py | launch-bound | gpu-idle | – | **no** | 2.0 | 300 | – | 0 |" in text)
check("healthy row", "| healthy.py | none | none |" in text)
check("torch2 row", "| compile_default | yes | 0.0 | 1 / 1 | 2 / 2 | 0 / 0 | yes |" in text)
check("overhead row", "| mlp | 5.012, 5.020 | 5.031, 5.019 | 0.18 |" in text)
check("lab ratios", "Ratios: bf16 vs fp32 1.77" in text)
check("max-batch", "| max_batch | 4096 |" in text)
check("failed list", "- examples, failed: launch_bound.py: top finding gpu-idle" in text)
# The import: data_starved's trace puts dataloader-starvation first (accepted); host_sync's does not
# put host-sync first (a warm-up trace); healthy's has findings; launch_bound's run missed its plant.
imp = {i["example"]: i for i in res["imported"]}
why = {n["example"]: n["why"] for n in res["not_imported"]}
check("imported", list(imp) == ["data_starved.py"], res)
check("imported row", imp["data_starved.py"]["file"] == "gpu/data_starved.pt.trace.json.gz" and
      imp["data_starved.py"]["cuda_sync"] == 0, imp)
check("copied", os.path.getsize(os.path.join(dd, "gpu", "data_starved.pt.trace.json.gz")) ==
      os.path.getsize(os.path.join(data, STARVED)))
check("not imported: run missed", "did not come first" in why.get("launch_bound.py", ""), why)
check("not imported: trace alone", "analyze of the trace alone puts warm-up first, not host-sync" in why.get("host_sync.py", ""), why)
check("not imported: healthy with findings", "not none" in why.get("healthy.py", ""), why)
rows = open(os.path.join(dd, "expected_findings.tsv")).read().splitlines()
check("manifest", rows[0] == "file\texpected\tcuda_sync\tsource" and rows[1].startswith(
    "gpu/data_starved.pt.trace.json.gz\tdataloader-starvation\tno\texamples/data_starved.py plants it") and len(rows) == 2, rows)
prov = open(os.path.join(dd, "PROVENANCE.md")).read()
check("provenance row", prov.rstrip().splitlines()[-1].startswith("| gpu/data_starved.pt.trace.json.gz | recorded here:"), prov[-400:])
check("doc lists the import", "| gpu/data_starved.pt.trace.json.gz | dataloader-starvation |" in text)
# A second import replaces its own rows rather than adding more.
p = subprocess.run([os.path.join(src, "scripts", "gpu-report"), r1, r2, "--doc", doc, "--import-traces",
                    "--data-dir", dd, "--trainscope", ts], capture_output=True, text=True)
check("second import", p.returncode == 0, p.stderr)
check("manifest once", len(open(os.path.join(dd, "expected_findings.tsv")).read().splitlines()) == 2)
check("provenance once", open(os.path.join(dd, "PROVENANCE.md")).read().count("| gpu/data_starved") == 1)
shutil.rmtree(tmp)
print("GPU REPORT OK %d" % ok[0])
