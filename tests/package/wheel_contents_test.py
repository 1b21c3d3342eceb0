#!/usr/bin/env python3
"""The pip wheel as a file (issue #34): one wheel in WHEEL_DIR named for the version CMakeLists.txt
declares, under 25 MiB, every RECORD line's sha256 and size recomputed from the zip, the files a user
needs (command, agent, examples, the shipped library, third-party licenses), no Python caches, an
executable binary, and the metadata pip and PyPI read: name, version, summary, Python range,
classifiers, no project URL or license the project does not have, the console script.
Usage: wheel_contents_test.py WHEEL_DIR SOURCE_DIR"""
import base64
import glob
import hashlib
import os
import re
import sys
import zipfile
from email.parser import Parser

wheel_dir, src = sys.argv[1], sys.argv[2]
wheels = glob.glob(os.path.join(wheel_dir, "trainscope-*.whl"))
assert len(wheels) == 1, "expected one wheel in %s, found %s" % (wheel_dir, wheels)
whl = wheels[0]
version = re.search(r"^project\(trainscope VERSION ([0-9.]+)", open(os.path.join(src, "CMakeLists.txt")).read(), re.M).group(1)
assert re.fullmatch(r"trainscope-%s-py3-none-manylinux_\d+_\d+_x86_64\.whl" % re.escape(version),
                    os.path.basename(whl)), os.path.basename(whl)
size = os.path.getsize(whl)
assert size <= 25 * 1024 * 1024, "%s is %d bytes, over 25 MiB" % (whl, size)

z = zipfile.ZipFile(whl)
di = "trainscope-%s.dist-info/" % version
names = set(z.namelist())
rows = [l.split(",") for l in z.read(di + "RECORD").decode().splitlines()]
recorded = {r[0] for r in rows}
assert recorded == names, "RECORD and the zip differ: %s" % (recorded ^ names)
for path, h, n in rows:
    if path == di + "RECORD":
        assert h == n == "", "RECORD lists a hash for itself"
        continue
    data = z.read(path)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert (h, int(n)) == (want, len(data)), "RECORD is wrong for " + path
# The agent and the examples as in the source tree, file for file.
for tree, under in (("agent", "agent"), ("examples", "examples")):
    for root, dirs, files in os.walk(os.path.join(src, tree)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".pyc"):
                continue
            rel = os.path.relpath(os.path.join(root, f), os.path.join(src, tree))
            assert "trainscope/_bundle/share/trainscope/%s/%s" % (under, rel) in names, "the wheel lacks %s/%s" % (tree, rel)
for f in ["trainscope/__init__.py", "trainscope/__main__.py", "trainscope/_bundle/bin/trainscope",
          "trainscope/_bundle/lib/libisal.so.2", "trainscope/_bundle/share/trainscope/BUILDINFO",
          di + "licenses/isa-l", di + "licenses/simdjson"]:
    assert f in names, "the wheel lacks " + f
assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")], "the wheel carries Python caches"
assert (z.getinfo("trainscope/_bundle/bin/trainscope").external_attr >> 16) & 0o111, "the binary is not executable"

m = Parser().parsestr(z.read(di + "METADATA").decode())
assert (m["Name"], m["Version"]) == ("trainscope", version), (m["Name"], m["Version"])
assert m["Summary"] and m["Requires-Python"], "METADATA lacks a summary or a Python range"
classifiers = m.get_all("Classifier") or []
assert "Operating System :: POSIX :: Linux" in classifiers, classifiers
# No project URL is published; none may be invented. The repository states no license of its own.
assert not m.get_all("Project-URL") and not m["Home-page"] and not m["License"], \
    "METADATA names a URL or a license that does not exist"
assert not [c for c in classifiers if c.startswith("License ::")], classifiers
w = Parser().parsestr(z.read(di + "WHEEL").decode())
assert w["Root-Is-Purelib"] == "false" and whl.endswith(w["Tag"] + ".whl"), (w["Tag"], whl)
ep = z.read(di + "entry_points.txt").decode()
assert "[console_scripts]" in ep and "trainscope = trainscope:main" in ep, ep
print("WHEEL CONTENTS OK: %s, %d bytes, %d files" % (os.path.basename(whl), size, len(names)))
