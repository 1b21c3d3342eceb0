"""Runs one corpus case (tests/corpus/<case>/) under `trainscope run` and checks the report
against the expectations written in the case's own source (never taken from trainscope's output).

Markers (README.md beside this file):
  # expect: top ID                 the first finding is ID
  # expect: finding ID             ID is among the findings
  # expect: absent ID[, ID...]     none of these is among the findings
  # expect: code-change ID         ID is among the findings and its fix is a change to the code only:
                                   no --set setting (fix_settings empty), so verify cannot run it as is
  # expect: fix ID TEXT            ID is among the findings and its fix (text or code) names TEXT: the
                                   knob of the API the script uses
  <code>  # expect-site: ID        finding ID names this line (file:line) among its sites
  <code>  # expect-site: ID names V   ... and its note starts with V (the variable a leak is kept in)
  <code>  # expect-site: ID first     ... before any other line of the same role (the costliest)
  <code>  # expect-site: ID caller    ... as the line that called the function of one of its sites
  # corpus: run ARGS...            the command (default: python train.py); `torchrun` runs as
                                   `python -m torch.distributed.run`
  # corpus: set KEY=VALUE          passed as --set; the report must say it was applied
  # corpus: torch2-only            not run on PyTorch 1.13 (the framework is not installed there)
  # corpus: openmp-spins           the job runs under OpenMP's default wait policy: the suite sets
                                   OMP_WAIT_POLICY=PASSIVE for speed (tests/CMakeLists.txt), and a
                                   case about threads that spin at their barriers needs the spinning
  # corpus: serial                 the case runs alone under ctest (RUN_SERIAL): its finding is the
                                   job's own threads contending for the cores, or one that other tests
                                   saturating the cores would supply
  # corpus: waits                  the case's time is mostly sleeps: it takes half a core's slots
                                   under ctest (tests/CMakeLists.txt); nothing here reads it
  # corpus: own-times              the script times its own phases into own_times.json (keys of
                                   run.time_account, seconds); each must match within 30% or 0.3 s

Usage: check_case.py TRAINSCOPE PYTHON CASE_DIR
The case is copied to a fresh directory first (frameworks write their outputs beside it).
Prints "ok ..." per check, "SKIP reason" where the case cannot run on this Python, then
"CORPUS OK <case>" last; exits non-zero at the first failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

EXPECT = re.compile(r"#\s*expect:\s*(top|finding|absent|code-change|fix)\s+(.+?)\s*$")
SITE = re.compile(r"#\s*expect-site:\s*([a-z0-9-]+)(?:\s+names\s+(\S+)|\s+(first)|\s+(caller))?\s*$")
CORPUS = re.compile(r"#\s*corpus:\s*(run|set|torch2-only|own-times|openmp-spins|serial|waits)\s*(.*?)\s*$")


def markers(case):
    m = {"top": None, "finding": [], "absent": [], "code-change": [], "fix": [], "sites": [], "run": None, "set": [], "torch2_only": False,
         "own_times": False, "openmp_spins": False}
    for name in sorted(os.listdir(case)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(case, name), encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                e = EXPECT.search(line)
                if e:
                    kind, arg = e.group(1), e.group(2)
                    if kind == "top":
                        m["top"] = arg
                    elif kind == "fix":
                        fid, _, text = arg.partition(" ")
                        m["fix"].append((fid, text.strip()))
                    else:
                        m[kind].extend(a.strip() for a in arg.split(",") if a.strip())
                s = SITE.search(line)
                if s and not line.lstrip().startswith("#"):
                    m["sites"].append((s.group(1), name, lineno, s.group(2), bool(s.group(3)), bool(s.group(4))))
                c = CORPUS.search(line)
                if c:
                    if c.group(1) == "run":
                        m["run"] = c.group(2).split()
                    elif c.group(1) == "set":
                        m["set"].append(c.group(2))
                    elif c.group(1) == "own-times":
                        m["own_times"] = True
                    elif c.group(1) == "openmp-spins":
                        m["openmp_spins"] = True
                    elif c.group(1) == "serial":
                        pass  # read by tests/corpus/CMakeLists.txt: the case runs alone (RUN_SERIAL)
                    else:
                        m["torch2_only"] = True
    return m


def measured(report):
    """One line of what the run measured, so that a failed expectation in CI's log says why (the
    step's parts, and how busy the host was beside the job: cases run two at a time)."""
    run, samples = report.get("run", {}), report.get("samples", {})
    summ = (run.get("agent") or {}).get("summary") or {}
    parts = ["%s %.1f" % (k, summ[k]) for k in ("step_ms", "compute_ms", "data_wait_pct", "io_pct", "h2d_pct")
             if isinstance(summ.get(k), (int, float))]
    for k in ("host_cpu_mean_pct", "process_tree_cpu_mean_pct", "process_tree_sys_mean_pct",
              "process_tree_minflt_mean_per_s", "threads_total", "nonvoluntary_switches_per_s"):
        if isinstance(samples.get(k), (int, float)):
            parts.append("%s %.0f" % (k, samples[k]))
    parts.append("steps %s wall %.1f s" % ((run.get("agent") or {}).get("steps"), run.get("wall_s") or 0))
    return ", ".join(parts)


def own_times(check, account, path):
    """Each phase the script timed itself against trainscope's account of it."""
    check("time_account", account is not None, "run.time_account is null")
    with open(path) as fh:
        own = json.load(fh)
    parts = ("before_first_step_s", "compile_s", "train_steps_s", "eval_s", "checkpoint_s", "data_wait_s",
             "profiler_s", "other_s")
    total = sum(account[k] for k in parts)
    check("buckets add up", abs(total - account["total_s"]) <= 1e-6 * max(1.0, account["total_s"]) + 1e-9,
          "sum %.6f vs total %.6f" % (total, account["total_s"]))
    for key, want in sorted(own.items()):
        got = account.get(key)
        if key == "train_steps_s" and got is not None:
            # The script's loop clock also ran through trainscope's profiler window (between two of
            # its steps), which the account keeps apart.
            got += account.get("profiler_s", 0)
        ok = got is not None and abs(got - want) <= max(0.3 * want, 0.3)
        print("  %s: own %.3f s, trainscope %s s" % (key, want, "%.3f" % got if got is not None else "-"))
        check("own time " + key, ok, "own %.3f s, trainscope %s" % (want, got))


def main():
    trainscope, python, case = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
    if os.sep in python:
        python = os.path.abspath(python)
    name = os.path.basename(case.rstrip("/"))
    m = markers(case)
    check = Checks(verbose=False)
    check("markers", m["top"] or m["finding"] or m["absent"] or m["fix"], "the case states what it expects")
    # The installed torch's version from its package metadata: importing torch for it would cost
    # about a second of CPU per case, beside the case's own run.
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                             capture_output=True, text=True).stdout.strip()
    if m["torch2_only"] and not version.startswith("2."):
        print("SKIP %s needs PyTorch 2.x and a framework not installed for %s (PyTorch %s)" % (name, python, version))
        print("CORPUS OK %s" % name)
        return
    work = tempfile.mkdtemp(prefix="corpus-%s-" % name)
    try:
        src = os.path.join(work, name)
        shutil.copytree(case, src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        out = os.path.join(work, "out")
        cmd = m["run"] or ["python", "train.py"]
        if cmd[0] == "torchrun":
            cmd = [python, "-m", "torch.distributed.run"] + cmd[1:]
        elif cmd[0] == "python":
            cmd = [python] + cmd[1:]
        argv = [trainscope, "run", "--out", out]
        for kv in m["set"]:
            argv += ["--set", kv]
        argv += ["--"] + cmd
        # Its own store (TRAINSCOPE_HOME): cases run in parallel, and one shared SQLite file was once busy.
        # TMPDIR inside `work`: what a case writes to its temporary folder (checkpoints, samples) goes
        # with it, whether or not the script removes it.
        os.mkdir(os.path.join(work, "tmp"))
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                   TRAINSCOPE_HOME=os.path.join(work, "home"), TMPDIR=os.path.join(work, "tmp"))
        if m["openmp_spins"]:
            env.pop("OMP_WAIT_POLICY", None)
        p = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=600)
        # A failure's cause may lie far above the tail (a torchrun rank's lines come before torchrun's
        # own 45): the lines that say why, from the whole stderr, then its tail.
        said = [l for l in p.stderr.splitlines()
                if re.search(r"terminate called|Fatal Python error|^(\[rank\d+\]: )?\w+(Error|Exception)\b", l)]
        check("exit status", p.returncode == 0, "rc %d; stderr lines that say why: %s; stderr tail: %s"
              % (p.returncode, " | ".join(said[:10]), p.stderr[-2000:]))
        with open(os.path.join(out, "report.json")) as fh:
            report = json.load(fh)
        findings = report.get("findings", [])
        ids = [f["id"] for f in findings]
        print("findings: %s" % ", ".join("%s (%.0f%%)" % (f["id"], f.get("recoverable_pct", 0)) for f in findings))
        print("measured: %s" % measured(report))
        warnings = report.get("run", {}).get("warnings") or []
        for w in warnings:
            print("warning: %s" % w)
        # The run's profiler traces are read in every process layout: two Hogwild trainers (no rank)
        # once exported into one trace.json, interleaved, and no trace was analysed.
        unread = [w for w in warnings if "not analysed" in w]
        check("traces read", not unread, "; ".join(unread))
        if m["top"]:
            check("top finding", ids[:1] == [m["top"]], "want %s, got %s" % (m["top"], ids))
        for fid in m["finding"]:
            check("finding " + fid, fid in ids, "got %s" % ids)
        for fid in m["absent"]:
            check("absent " + fid, fid not in ids, "got %s" % ids)
        for fid in m["code-change"]:
            f = next((f for f in findings if f["id"] == fid), None)
            check("code-change " + fid, f is not None and not f.get("fix_settings"),
                  "fix_settings: %s" % (f.get("fix_settings") if f else "no finding %s (got %s)" % (fid, ids)))
        for fid, text in m["fix"]:
            f = next((f for f in findings if f["id"] == fid), None)
            said = (f.get("fix", "") + "\n" + f.get("fix_code", "")) if f else ""
            check("fix %s names %s" % (fid, text), text in said,
                  "fix: %s" % (said if f else "no finding %s (got %s)" % (fid, ids)))
        for fid, fname, lineno, names, first, caller in m["sites"]:
            f = next((f for f in findings if f["id"] == fid), None)
            check("site %s %s:%d" % (fid, fname, lineno), f is not None, "no finding %s (got %s)" % (fid, ids))
            sites = f.get("sites", [])
            if caller:
                up = [s["caller"] for s in sites if s.get("caller")]
                hit = [c for c in up if os.path.basename(c["path"]) == fname and c["line"] == lineno]
                check("site %s %s:%d caller" % (fid, fname, lineno), hit,
                      "callers named: %s" % ["%s:%d" % (c["path"], c["line"]) for c in up])
                check("caller path %s" % fname, hit[0]["path"] == fname, "shown as %s" % hit[0]["path"])
                continue
            hit = [s for s in sites if os.path.basename(s["file"]) == fname and s["line"] == lineno]
            check("site %s %s:%d" % (fid, fname, lineno), hit,
                  "named: %s" % ["%s:%d" % (s["path"], s["line"]) for s in sites])
            check("site path %s" % fname, hit[0]["path"] == fname, "shown as %s (relative to the run's directory)" % hit[0]["path"])
            if names:
                check("site %s names %s" % (fid, names), hit[0]["note"].startswith(names + " "),
                      "note: %s" % hit[0]["note"])
            if first:
                same = [s for s in sites if s["role"] == hit[0]["role"]]
                check("site %s %s:%d first" % (fid, fname, lineno), same[0] is hit[0],
                      "order: %s" % ["%s:%d (%s)" % (s["path"], s["line"], s["note"]) for s in same])
        run = report.get("run", {})
        if m["own_times"]:
            own_times(check, run.get("time_account"), os.path.join(src, "own_times.json"))
        for kv in m["set"]:
            key = kv.split("=", 1)[0]
            o = next((o for o in run.get("overrides", []) if o["key"] == key), None)
            check("--set %s applied" % key, o is not None and o["applied"], "override: %s" % o)
        print("CORPUS OK %s" % name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
