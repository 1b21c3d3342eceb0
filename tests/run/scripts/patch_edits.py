"""The patcher of `verify --patch` (agent/trainscope_agent/patch.py) on real files: each edit's
result is written out by hand below and compared byte for byte; every diff is applied with
`patch -p1` and `git apply --check` to a fresh copy and must give that result; every refusal of
issue 39's item 5 gives one line for its site while the other sites are still patched, and no
file of the "user" is changed (hashed before and after). Prints PATCH EDITS OK."""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
from trainscope_agent import patch  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL " + what)


def sha1(path):
    with open(path, "rb") as fh:
        return hashlib.sha1(fh.read()).hexdigest()


class Project:
    """A temporary project directory with files written as bytes."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="ts_patch_")

    def write(self, rel, data):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def edit(self, rel, op, line=0, **kw):
        path = os.path.join(self.root, rel)
        e = {"fix": kw.pop("fix", op), "op": op, "file": path, "line": line,
             "sha1": kw.pop("sha1", None) or (sha1(path) if os.path.isfile(path) else "")}
        e.update(kw)
        return e

    def hashes(self):
        out = {}
        for d, _, files in os.walk(self.root):
            for f in files:
                p = os.path.join(d, f)
                out[p] = sha1(p)
        return out

    def run(self, edits):
        before = self.hashes()
        # as verify calls it: a child process, the spec on stdin
        proc = subprocess.run([sys.executable, "-m", "trainscope_agent.patch"], input=json.dumps(
            {"root": self.root, "edits": edits, "out": self.root + ".diff"}).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "..", "agent")))
        check(proc.returncode == 0, "patcher exit %d: %s" % (proc.returncode, proc.stderr.decode()))
        check(self.hashes() == before, "the patcher changed a file of the project")
        out = json.loads(proc.stdout.decode())
        with open(self.root + ".diff", "rb") as fh:
            out["bytes"] = fh.read()
        os.remove(self.root + ".diff")
        return out

    def applied(self, diff):
        """The project's files after `patch -p1` of `diff` in a fresh copy ({rel: bytes})."""
        copy = tempfile.mkdtemp(prefix="ts_patch_copy_")
        shutil.rmtree(copy)
        shutil.copytree(self.root, copy)
        for d, _, files in os.walk(copy):
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        with open(os.path.join(copy, "fix.diff"), "wb") as fh:
            fh.write(diff)
        g = subprocess.run(["git", "apply", "--check", "fix.diff"], cwd=copy, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        check(g.returncode == 0, "git apply --check: " + g.stdout.decode())
        p = subprocess.run(["patch", "-p1", "-s", "-i", "fix.diff"], cwd=copy, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        check(p.returncode == 0, "patch -p1: " + p.stdout.decode())
        out = {}
        for d, _, files in os.walk(copy):
            for f in files:
                if f != "fix.diff" and not f.endswith(".orig"):
                    with open(os.path.join(d, f), "rb") as fh:
                        out[os.path.relpath(os.path.join(d, f), copy)] = fh.read()
        shutil.rmtree(copy)
        return out


def case(name, files, edits_of, expect, refused=()):
    """files {rel: text}; edits_of(project) -> edits; expect {rel: text after}; refused: substrings,
    one per refused site, in order."""
    pr = Project()
    for rel, text in files.items():
        pr.write(rel, text)
    out = pr.run(edits_of(pr))
    got = pr.applied(out["bytes"]) if out["bytes"] else {}
    for rel, text in expect.items():
        want = text.encode("utf-8") if isinstance(text, str) else text
        have = got.get(rel, files[rel].encode("utf-8") if isinstance(files[rel], str) else files[rel])
        check(have == want, "%s: %s after the patch:\n%r\nexpected:\n%r" % (name, rel, have, want))
        try:
            compile(have, rel, "exec")
        except SyntaxError as e:
            check(False, "%s: %s does not compile after the patch: %s" % (name, rel, e))
    changed = sorted(out["files"])
    check(changed == sorted(r for r in expect if expect[r] != files[r]),
          "%s: files in the patch %s" % (name, changed))
    reasons = [r["reason"] for r in out["refused"]]
    check(len(reasons) == len(refused), "%s: refusals %s, expected %d" % (name, reasons, len(refused)))
    for r, want in zip(reasons, refused):
        check(want in r and "\n" not in r, "%s: refusal %r lacks %r" % (name, r, want))
    shutil.rmtree(pr.root, ignore_errors=True)
    print("ok " + name)
    return out


KW = [["num_workers", "4"], ["persistent_workers", "True"]]

# 1. An existing keyword is replaced, not added twice; the others appended; comment kept.
case("replace-keyword",
     {"train.py": "from torch.utils.data import DataLoader\n"
                  "loader = DataLoader(ds, batch_size=8, num_workers=0)  # the loader\n"},
     lambda p: [p.edit("train.py", "keywords", 2, call="loader", keywords=KW)],
     {"train.py": "from torch.utils.data import DataLoader\n"
                  "loader = DataLoader(ds, batch_size=8, num_workers=4, persistent_workers=True)  # the loader\n"})

# 2. A call over several lines, `)` on its own line, trailing comma: one keyword per line.
case("multi-line-trailing-comma",
     {"data.py": "def build(ds):\n"
                 "    return DataLoader(\n"
                 "        ds,\n"
                 "        batch_size=8,  # per device\n"
                 "    )\n"},
     lambda p: [p.edit("data.py", "keywords", 2, call="loader", keywords=KW)],
     {"data.py": "def build(ds):\n"
                 "    return DataLoader(\n"
                 "        ds,\n"
                 "        batch_size=8,  # per device\n"
                 "        num_workers=4,\n"
                 "        persistent_workers=True,\n"
                 "    )\n"})

# 3. ... no trailing comma, a comment after the last argument; recorded at a middle line.
case("multi-line-comment",
     {"data.py": "loader = DataLoader(ds,\n"
                 "                    shuffle=True  # shuffled\n"
                 "                    )\n"},
     lambda p: [p.edit("data.py", "keywords", 2, call="loader", keywords=[["num_workers", "2"]])],
     {"data.py": "loader = DataLoader(ds,\n"
                 "                    shuffle=True,  # shuffled\n"
                 "                    num_workers=2\n"
                 "                    )\n"})

# 4. CRLF line endings stay CRLF; no newline at the end of the file stays so.
case("crlf-no-final-newline",
     {"t.py": b"import torch\r\n# comment\r\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\r\nx = 1"},
     lambda p: [p.edit("t.py", "keywords", 3, call="optimizer", keywords=[["fused", "True"]]),
                p.edit("t.py", "threads", value=4)],
     {"t.py": b"import torch\r\ntorch.set_num_threads(4)\r\n# comment\r\n"
              b"opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)\r\nx = 1"})

# 5. A long single line: the keywords go on a line of their own, aligned under the arguments.
long_args = "batch_size=batch_size, shuffle=True, collate_fn=collate, drop_last=True"
case("long-line",
     {"d.py": "loader = DataLoader(dataset, %s)\n" % long_args},
     lambda p: [p.edit("d.py", "keywords", 1, call="loader", keywords=KW)],
     {"d.py": "loader = DataLoader(dataset, %s,\n"
              "                    num_workers=4, persistent_workers=True)\n" % long_args})

# 6. Framework knobs: TrainingArguments, Lightning's Trainer (its precision replaced).
case("frameworks",
     {"hf.py": "args = TrainingArguments(output_dir='o',\n"
               "                         bf16=False)\n",
      "pl.py": "trainer = L.Trainer(max_steps=60, precision=\"32-true\")\n"},
     lambda p: [p.edit("hf.py", "keywords", 1, call="training_args",
                       keywords=[["dataloader_num_workers", "3"], ["bf16", "True"], ["optim", "\"adamw_torch_fused\""]]),
                p.edit("pl.py", "keywords", 1, call="trainer", keywords=[["precision", "\"bf16-mixed\""]])],
     {"hf.py": "args = TrainingArguments(output_dir='o',\n"
               "                         bf16=True, dataloader_num_workers=3, optim=\"adamw_torch_fused\")\n",
      "pl.py": "trainer = L.Trainer(max_steps=60, precision=\"bf16-mixed\")\n"})

# 7. The loop: autocast around the forward statement (a multi-line one), compile after the model
# is built in the function, non_blocking on each copy of the line, zero_grad(set_to_none=True).
loop = ("import torch\n"
        "\n"
        "\n"
        "def train(loader, device):\n"
        "    model = Net().to(device)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x, y in loader:\n"
        "        x, y = x.to(device), y.cuda()\n"
        "        loss = loss_fn(model(x),\n"
        "                       y)  # forward\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n")
case("loop-edits",
     {"loop.py": loop},
     lambda p: [p.edit("loop.py", "wrap", 9, **{"with": "torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)"}),
                p.edit("loop.py", "compile", 9),
                p.edit("loop.py", "keywords", 8, call="copy", keywords=[["non_blocking", "True"]]),
                p.edit("loop.py", "zero_grad")],
     {"loop.py": "import torch\n"
                 "\n"
                 "\n"
                 "def train(loader, device):\n"
                 "    model = Net().to(device)\n"
                 "    model = torch.compile(model)\n"
                 "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    for x, y in loader:\n"
                 "        x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)\n"
                 "        with torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16):\n"
                 "            loss = loss_fn(model(x),\n"
                 "                           y)  # forward\n"
                 "        opt.zero_grad(set_to_none=True)\n"
                 "        loss.backward()\n"})

# 8. The script's own set_num_threads gets the new value; a coding cookie and a non-ASCII comment
# on the call's line (columns are UTF-8 bytes of the decoded text).
case("threads-and-latin1",
     {"s.py": "# -*- coding: latin-1 -*-\nimport torch\ntorch.set_num_threads(16)\n".encode("latin-1")
      + "loader = DataLoader(ds, batch_size=4)  # caf\u00e9 \u00e0 l'ombre\n".encode("latin-1")},
     lambda p: [p.edit("s.py", "threads", value=2), p.edit("s.py", "keywords", 4, call="loader", keywords=KW)],
     {"s.py": "# -*- coding: latin-1 -*-\nimport torch\ntorch.set_num_threads(2)\n".encode("latin-1")
      + "loader = DataLoader(ds, batch_size=4, num_workers=4, persistent_workers=True)  # caf\u00e9 \u00e0 l'ombre\n"
      .encode("latin-1")})

# 8b. A UTF-8 BOM stays; a tab-indented loop gets a tab more under the `with`.
case("bom-and-tabs",
     {"b.py": b"\xef\xbb\xbfloader = DataLoader(ds)\n",
      "t.py": "import torch\nfor x in data:\n\tloss = model(x)\n\tloss.backward()\n"},
     lambda p: [p.edit("b.py", "keywords", 1, call="loader", keywords=KW),
                p.edit("t.py", "wrap", 3, **{"with": "torch.autocast('cpu')"})],
     {"b.py": b"\xef\xbb\xbfloader = DataLoader(ds, num_workers=4, persistent_workers=True)\n",
      "t.py": "import torch\nfor x in data:\n\twith torch.autocast('cpu'):\n\t\tloss = model(x)\n\tloss.backward()\n"})

# 8c. Keywords of a call that passes one **mapping (pytorch/examples' mnist:
# `DataLoader(dataset1, **train_kwargs)`, num_workers in it on CUDA): they go into a merged copy of the
# mapping, which wins over the key it may hold; a keyword written out is replaced where it is; a
# mapping that is an expression is parenthesized.
case("one-mapping",
     {"m.py": "from torch.utils.data import DataLoader\n"
              "kw = {'batch_size': 8}\n"
              "kw.update({'num_workers': 1, 'pin_memory': True})\n"
              "loader = DataLoader(ds, **kw)\n"
              "test = DataLoader(ds, shuffle=False, **(kw or {}))\n"
              "opt = torch.optim.AdamW(params, lr=1e-3, **opt_kw)\n"},
     lambda p: [p.edit("m.py", "keywords", 4, call="loader", keywords=KW),
                p.edit("m.py", "keywords", 5, call="loader", keywords=[["shuffle", "True"], ["num_workers", "2"]]),
                p.edit("m.py", "keywords", 6, call="optimizer", keywords=[["lr", "1e-3"], ["fused", "True"]])],
     {"m.py": "from torch.utils.data import DataLoader\n"
              "kw = {'batch_size': 8}\n"
              "kw.update({'num_workers': 1, 'pin_memory': True})\n"
              "loader = DataLoader(ds, **{**kw, \"num_workers\": 4, \"persistent_workers\": True})\n"
              "test = DataLoader(ds, shuffle=True, **{**(kw or {}), \"num_workers\": 2})\n"
              "opt = torch.optim.AdamW(params, lr=1e-3, **{**opt_kw, \"fused\": True})\n"})

# 8e. A loader or optimizer built by the user's helper from its own parameters or its **kwargs
# (makemore's `InfiniteDataLoader(train_dataset, ..., num_workers=args.num_workers)` around
# `DataLoader(dataset, sampler=..., **kwargs)`): the knob goes into the helper's call, at the line
# that called it; the helper stays as it is. Where the text does not prove the forwarding (a
# literal at the site, a parameter of the knob's name that would take it, the parameter passed by
# position at the caller), the site itself is edited as before.
HELPERS = ("from torch.utils.data import DataLoader\n"
           "\n"
           "\n"
           "class InfiniteLoader:\n"
           "    def __init__(self, dataset, **kwargs):\n"
           "        self.loader = DataLoader(dataset, shuffle=True, **kwargs)\n"
           "\n"
           "\n"
           "def build(ds, workers=0, pin=False):\n"
           "    return DataLoader(ds, batch_size=8, num_workers=workers, pin_memory=pin)\n"
           "\n"
           "\n"
           "def build_pos(ds, workers=0):\n"
           "    return DataLoader(ds, num_workers=workers)\n"
           "\n"
           "\n"
           "def build_fixed(ds, workers=0):\n"
           "    return DataLoader(ds, num_workers=2)\n"
           "\n"
           "\n"
           "def build_kw(ds, num_workers=0, **kw):\n"
           "    return DataLoader(ds, **kw)\n"
           "\n"
           "\n"
           "class Data:\n"
           "    def loader(self, ds, workers=0):\n"
           "        return DataLoader(ds, num_workers=workers)\n"
           "\n"
           "\n"
           "def make_opt(params, **kw):\n"
           "    return torch.optim.SGD(params, momentum=0.9, **kw)\n")
CALLS = ("from helpers import *\n"
         "a = InfiniteLoader(ds, batch_size=8, num_workers=args.workers)\n"
         "b = build(ds, pin=True)\n"
         "c = build_pos(ds, 4)\n"
         "d = build_fixed(ds)\n"
         "e = build_kw(ds, batch_size=4)\n"
         "f = Data().loader(ds)\n"
         "o = make_opt(model.parameters(), lr=0.1)\n")


NW = [["num_workers", "4"]]


def through(p, line, func, caller, call="loader", keywords=KW):
    c = p.edit("train.py", "keywords", caller)
    return p.edit("helpers.py", "keywords", line, call=call, keywords=keywords, func=func,
                  caller={"file": c["file"], "line": caller, "sha1": c["sha1"]})


out = case("through-the-caller", {"helpers.py": HELPERS, "train.py": CALLS},
           lambda p: [through(p, 6, "__init__", 2), through(p, 10, "build", 3, keywords=NW), through(p, 14, "build_pos", 4, keywords=NW),
                      through(p, 18, "build_fixed", 5), through(p, 22, "build_kw", 6),
                      through(p, 27, "loader", 7, keywords=NW),
                      through(p, 31, "make_opt", 8, "optimizer", [["fused", "True"]])],
           {"helpers.py": HELPERS.replace("DataLoader(ds, num_workers=workers)\n\n\ndef build_fixed",
                                          "DataLoader(ds, num_workers=4)\n\n\ndef build_fixed")
                                 .replace("num_workers=2)", "num_workers=4, persistent_workers=True)")
                                 .replace("DataLoader(ds, **kw)", "DataLoader(ds, **{**kw, \"num_workers\": 4, \"persistent_workers\": True})"),
            "train.py": CALLS.replace("num_workers=args.workers)", "num_workers=4, persistent_workers=True)")
                             .replace("build(ds, pin=True)", "build(ds, pin=True, workers=4)")
                             .replace("Data().loader(ds)", "Data().loader(ds, workers=4)")
                             .replace("lr=0.1)", "lr=0.1, fused=True)")})
check([(e["file"], e["line"]) for e in out["edits"]] ==
      [("train.py", 2), ("train.py", 3), ("helpers.py", 14), ("helpers.py", 18), ("helpers.py", 22), ("train.py", 7),
       ("train.py", 8)], "through-the-caller: edits at %s" % [(e["file"], e["line"]) for e in out["edits"]])
check("InfiniteLoader passes it on to the call at helpers.py:6" in out["edits"][0]["what"],
      "through-the-caller: what %r" % out["edits"][0]["what"])

# 8d. Anomaly detection turned off where it was turned on: the mode by position or by keyword, a
# comment kept; Lightning's knob at Trainer(...); a detect_anomaly() block is the user's to remove.
case("anomaly",
     {"a.py": "import torch\ntorch.autograd.set_detect_anomaly(True)  # chasing a NaN\n",
      "k.py": "from torch import autograd\nautograd.set_detect_anomaly(mode=True, check_nan=True)\n",
      "pl.py": "trainer = L.Trainer(max_epochs=2, detect_anomaly=True)\n",
      "w.py": "import torch\nwith torch.autograd.detect_anomaly():\n    loss.backward()\n"},
     lambda p: [p.edit("a.py", "anomaly", 2), p.edit("k.py", "anomaly", 2),
                p.edit("pl.py", "keywords", 1, call="trainer", keywords=[["detect_anomaly", "False"]]),
                p.edit("w.py", "anomaly", 2)],
     {"a.py": "import torch\ntorch.autograd.set_detect_anomaly(False)  # chasing a NaN\n",
      "k.py": "from torch import autograd\nautograd.set_detect_anomaly(mode=False, check_nan=True)\n",
      "pl.py": "trainer = L.Trainer(max_epochs=2, detect_anomaly=False)\n",
      "w.py": "import torch\nwith torch.autograd.detect_anomaly():\n    loss.backward()\n"},
     refused=("detect_anomaly() block",))

# 9. Bad input (issue 39, item 5): one line per site, the other sites still patched.
good = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"
good_after = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, num_workers=4, persistent_workers=True)\n"


def bad_sites(p):
    edits = [p.edit("good.py", "keywords", 2, call="loader", keywords=KW)]
    # changed since the run: the hash the agent recorded is of the earlier text
    edits.append(p.edit("changed.py", "keywords", 2, call="loader", keywords=KW, sha1=hashlib.sha1(b"old").hexdigest()))
    # a notebook cell: ipykernel runs cells from files in a temporary folder
    cell = p.write("ipykernel_4242/2718281828.py", good)
    edits.append(dict(p.edit("ipykernel_4242/2718281828.py", "keywords", 2, call="loader", keywords=KW), file=cell))
    # exec: the agent's walk out of <string> lands on the exec() line
    edits.append(p.edit("via_exec.py", "keywords", 2, call="loader", keywords=KW))
    # a zip on sys.path: the site's file is a member of the archive
    z = os.path.join(p.root, "libs.zip")
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("helpers.py", good)
    edits.append({"fix": "zip", "op": "keywords", "call": "loader", "file": z + "/helpers.py", "line": 2,
                  "sha1": hashlib.sha1(good.encode()).hexdigest(), "keywords": KW})
    # site-packages
    edits.append(p.edit("venv/lib/python3.11/site-packages/pkg/data.py", "keywords", 2, call="loader", keywords=KW))
    # read-only
    ro = os.path.join(p.root, "readonly.py")
    os.chmod(ro, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    edits.append(p.edit("readonly.py", "keywords", 2, call="loader", keywords=KW))
    # two **mappings: which one holds num_workers is not in the text
    edits.append(p.edit("kwargs.py", "keywords", 2, call="loader", keywords=KW))
    # num_workers by position
    edits.append(p.edit("positional.py", "keywords", 2, call="loader", keywords=KW))
    # outside the directory the command runs in
    outside = os.path.join(tempfile.gettempdir(), "ts_patch_outside_%d.py" % os.getpid())
    with open(outside, "w") as fh:
        fh.write(good)
    edits.append({"fix": "outside", "op": "keywords", "call": "loader", "file": outside, "line": 2,
                  "sha1": sha1(outside), "keywords": KW})
    return edits


out = case("bad-input",
           {"good.py": good, "changed.py": good,
            "via_exec.py": "from torch.utils.data import DataLoader\nexec('loader = DataLoader(ds)')\n",
            "venv/lib/python3.11/site-packages/pkg/data.py": good, "readonly.py": good,
            "kwargs.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, **opts, **more)\n",
            "positional.py": "from torch.utils.data import DataLoader\nloader = DataLoader(ds, 8, True, None, None, 0)\n"},
           bad_sites,
           {"good.py": good_after, "changed.py": good, "readonly.py": good},
           refused=["changed.py:2: changed since the run", "2718281828.py:2: a notebook cell",
                    "via_exec.py:2: the call is made by code run through exec()",
                    "libs.zip/helpers.py:2: inside the archive", "site-packages/pkg/data.py:2: in an installed package",
                    "readonly.py:2: read-only", "kwargs.py:2: the call passes several **mappings",
                    "positional.py:2: num_workers is passed by position", "outside the directory the command runs in"])
os.remove(os.path.join(tempfile.gettempdir(), "ts_patch_outside_%d.py" % os.getpid()))
check([e["file"] for e in out["edits"]] == ["good.py"], "bad-input: only good.py patched: %s" % out["edits"])

# 10. Edits refused where the code has no place for them.
case("no-place",
     {"m.py": "import torch\n"
              "def step(model, x):\n"
              "    return model(x)\n"
              "doc = '''a\n"
              "b''' + model(x)\n"
              "y = 1; z = model(x)\n"
              "for b in model(x):\n"
              "    pass\n",
      "noimport.py": "x = model(y)\n"},
     lambda p: [p.edit("m.py", "compile", 3), p.edit("m.py", "wrap", 4, **{"with": "torch.autocast('cpu')"}),
                p.edit("m.py", "wrap", 6, **{"with": "torch.autocast('cpu')"}),
                p.edit("m.py", "wrap", 7, **{"with": "torch.autocast('cpu')"}),
                p.edit("noimport.py", "wrap", 1, **{"with": "torch.autocast('cpu')"}),
                p.edit("m.py", "keywords", 6, call="loader", keywords=KW)],
     {},
     refused=["a parameter?", "a string over several lines", "more than one statement", "compound statement",
              "does not `import torch`", "no DataLoader(...) call at line 6"])

if FAILS:
    print("%d failure(s)" % len(FAILS))
    sys.exit(1)
print("PATCH EDITS OK")
