"""Reads back what `trainscope run --mlflow / --wandb` logged, with the trackers' own packages.

    read_trackers.py mlflow TRACKING_URI      every run of every experiment: metrics, tags, findings artifact
    read_trackers.py wandb WANDB_PARENT_DIR   every offline run under DIR/wandb: config and summary

Prints one JSON object. W&B keeps an offline run only in its transaction log (run-<id>.wandb: a
header ":W&B", magic 0xBEE1, version 0, then 32 KiB blocks of records, each a 7-byte header
(CRC-32, length, type: full / first / middle / last) and a piece of a protobuf `Record`, the
format of LevelDB's log); the records are parsed with wandb's own protobuf classes.
"""
import glob
import json
import os
import struct
import sys


def read_mlflow(uri):
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient
    c = MlflowClient(uri)
    runs = []
    for exp in c.search_experiments():
        for r in c.search_runs([exp.experiment_id]):
            arts = [a.path for a in c.list_artifacts(r.info.run_id, "trainscope")]
            findings = None
            if "trainscope/findings.json" in arts:
                with open(c.download_artifacts(r.info.run_id, "trainscope/findings.json")) as f:
                    findings = json.load(f)
            runs.append({"run_id": r.info.run_id, "name": r.info.run_name, "status": r.info.status,
                         "metrics": r.data.metrics, "tags": {k: v for k, v in r.data.tags.items()
                                                             if k.startswith("trainscope/")},
                         "artifacts": arts, "findings": findings})
    return {"runs": runs}


def records(path):
    data = open(path, "rb").read()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    if ident != b":W&B" or magic != 0xBEE1:
        sys.exit("%s: not a W&B transaction log" % path)
    block, pos, cur = 32768, 7, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0 and length == 0:
            pos += left
            continue
        payload = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield payload
        elif kind == 2:
            cur = payload
        elif kind == 3:
            cur += payload
        elif kind == 4:
            yield cur + payload
            cur = b""


def read_wandb(parent):
    from wandb.proto import wandb_internal_pb2 as pb
    runs = []
    for path in sorted(glob.glob(os.path.join(parent, "wandb", "offline-run-*", "run-*.wandb"))):
        out = {"dir": os.path.basename(os.path.dirname(path)), "config": {}, "summary": {}}
        for data in records(path):
            r = pb.Record()
            r.ParseFromString(data)
            kind = r.WhichOneof("record_type")
            if kind == "run":
                out["id"], out["project"] = r.run.run_id, r.run.project
                for u in r.run.config.update:
                    out["config"][u.key] = json.loads(u.value_json)
            elif kind == "config":
                for u in r.config.update:
                    out["config"][u.key] = json.loads(u.value_json)
            elif kind == "summary":
                for u in r.summary.update:
                    if u.key:
                        out["summary"][u.key] = json.loads(u.value_json)
        runs.append(out)
    return {"runs": runs}


if __name__ == "__main__":
    which, where = sys.argv[1], sys.argv[2]
    print(json.dumps(read_mlflow(where) if which == "mlflow" else read_wandb(where)))
