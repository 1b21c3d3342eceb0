"""The run's summary and findings into the experiment trackers people already use.

    python trackers.py [--mlflow] [--wandb] REPORT_JSON

`trainscope run --mlflow / --wandb` runs this with the training's own Python (where the user's
mlflow / wandb are installed) after report.json is written. Stdlib only: mlflow and wandb are
imported only when asked for, and a missing one is one line on stderr and exit status 3, never an
import error at start-up. What is logged, to both (docs/AGENT.md, "Trackers"):

- metrics (numbers): trainscope/step_ms (median step after warm-up), trainscope/step_mean_ms,
  trainscope/data_wait_pct, trainscope/h2d_ms, trainscope/forward_ms, trainscope/backward_ms,
  trainscope/optimizer_ms, trainscope/gpu_ms, trainscope/steps, trainscope/wall_s,
  trainscope/findings_count, and trainscope/recoverable_pct (the top finding's share of the step);
- tags / summary text: trainscope/verdict, trainscope/scenario, trainscope/top_finding;
- the findings (id, severity, title, recoverable_fraction, gain, fix): MLflow as the artifact
  trainscope/findings.json beside report.json; W&B in the run's summary as trainscope/findings.

MLflow: into the run MLFLOW_RUN_ID names when it is set (MLflow's own way to attach a process to
an existing run; a script that calls mlflow.start_run() under the same variable logs there too),
else into a new run named "trainscope: <command>" of the experiment MLFLOW_EXPERIMENT_NAME / _ID
(MLflow's default without), at MLFLOW_TRACKING_URI or, without one, the local file store ./mlruns.
W&B: offline mode (WANDB_MODE, when set, wins), project WANDB_PROJECT or "trainscope", into the run
WANDB_RUN_ID names when set (resumed), else a new one; W&B's own variables (WANDB_DIR, ...) apply.
"""
import json
import os
import sys


def fail(msg, code=3):
    sys.stderr.write("trainscope: %s\n" % msg)
    sys.exit(code)


class Missing(Exception):
    """The tracker's package is not installed for this Python."""


def summarise(report):
    """(metrics, tags, findings) from a report.json (trainscope.report/2)."""
    run = report.get("run") or {}
    agent = run.get("agent") or {}
    s = agent.get("summary") or {}
    metrics = {}

    def num(key, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            metrics["trainscope/" + key] = float(value)

    for k in ("step_ms", "step_mean_ms", "data_wait_pct", "h2d_ms", "forward_ms", "backward_ms", "optimizer_ms",
              "gpu_ms"):
        num(k, s.get(k))
    num("steps", agent.get("steps"))
    num("wall_s", run.get("wall_s"))
    findings = []
    for f in report.get("findings") or []:
        findings.append({k: f.get(k) for k in ("id", "severity", "title", "recoverable_fraction", "gain", "fix")})
    num("findings_count", len(findings))
    if findings:
        num("recoverable_pct", 100.0 * (findings[0].get("recoverable_fraction") or 0.0))
    scenario = report.get("scenario") or {}
    tags = {
        "trainscope/verdict": str(report.get("verdict") or ""),
        "trainscope/scenario": str(scenario.get("id") or ""),
        "trainscope/top_finding": findings[0]["id"] if findings else "none",
    }
    return metrics, tags, findings


def command_of(report):
    cmd = (report.get("run") or {}).get("command") or report.get("command") or []
    return " ".join(cmd) if isinstance(cmd, list) else str(cmd)


def to_mlflow(report_path, report, metrics, tags, findings):
    try:
        import mlflow
    except ImportError:
        raise Missing("--mlflow: mlflow is not installed for %s (pip install mlflow)" % sys.executable)
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        # No server named: MLflow's local file store in the working directory. MLflow 3 keeps it in
        # maintenance mode and asks for this variable before it opens one.
        uri = "file:" + os.path.abspath("mlruns")
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(uri)
    run_id = os.environ.get("MLFLOW_RUN_ID") or None
    name = None if run_id else ("trainscope: " + command_of(report))[:250]
    with mlflow.start_run(run_id=run_id, run_name=name) as run:
        mlflow.log_metrics(metrics)
        mlflow.set_tags(tags)
        mlflow.log_dict(findings, "trainscope/findings.json")
        mlflow.log_artifact(report_path, "trainscope")
        rid = run.info.run_id
    sys.stderr.write("trainscope: mlflow: %d metrics and %d findings logged into run %s at %s\n"
                     % (len(metrics), len(findings), rid, uri))


def to_wandb(report, metrics, tags, findings):
    try:
        import wandb
    except ImportError:
        raise Missing("--wandb: wandb is not installed for %s (pip install wandb)" % sys.executable)
    os.environ.setdefault("WANDB_SILENT", "true")  # our one line says where it went
    mode = os.environ.get("WANDB_MODE") or "offline"
    run_id = os.environ.get("WANDB_RUN_ID") or None
    run = wandb.init(mode=mode, project=os.environ.get("WANDB_PROJECT") or "trainscope", id=run_id,
                     resume="allow" if run_id else None, job_type="trainscope",
                     config={"trainscope/command": command_of(report)})
    summary = dict(metrics)
    summary.update(tags)
    summary["trainscope/findings"] = findings
    run.summary.update(summary)
    where = getattr(run, "dir", "") or ""
    rid = run.id
    run.finish()
    sys.stderr.write("trainscope: wandb (%s): %d metrics and %d findings in run %s (%s)\n"
                     % (mode, len(metrics), len(findings), rid, os.path.dirname(where) or where))


def main(argv):
    want = {a for a in argv if a in ("--mlflow", "--wandb")}
    paths = [a for a in argv if not a.startswith("--")]
    if not want or len(paths) != 1:
        fail("usage: trackers.py [--mlflow] [--wandb] REPORT_JSON", 2)
    path = paths[0]
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: cannot read the report (%s)" % (path, e), 1)
    metrics, tags, findings = summarise(report)
    # Each tracker on its own: one that is missing or fails does not keep the other from its log.
    failed = 0
    for flag, export in (("--mlflow", lambda: to_mlflow(path, report, metrics, tags, findings)),
                         ("--wandb", lambda: to_wandb(report, metrics, tags, findings))):
        if flag not in want:
            continue
        try:
            export()
        except Missing as e:
            sys.stderr.write("trainscope: %s\n" % e)
            failed = failed or 3
        except Exception as e:  # the tracker's own error (a server down, a bad URI): one line
            sys.stderr.write("trainscope: %s: %s: %s\n" % (flag, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            failed = 1
    sys.exit(failed)


if __name__ == "__main__":
    main(sys.argv[1:])
