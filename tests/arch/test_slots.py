"""tests/arch/test_slots.py CTEST BUILD_DIR: every registered test takes a core's share in
half-core slots (tests/CMakeLists.txt): two, or one for a test that mostly sleeps, and the build's
resource spec has two slots per core. A test with no slot would run beside as many others as
ctest -j(2 x cores) allows: a computing test with three computing neighbours on two cores, more
than the load that moved outcomes in sessions 21-38's -j3 trials.
Prints "TEST SLOTS OK" and the count of each kind."""
import collections
import json
import os
import subprocess
import sys


def main():
    ctest, build = sys.argv[1:3]
    out = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("FAIL ctest --show-only=json-v1 exited %d: %s" % (out.returncode, out.stderr.strip()[-300:]))
    tests = json.loads(out.stdout)["tests"]
    kinds, bad = collections.Counter(), []
    for t in tests:
        groups = [p["value"] for p in t.get("properties", []) if p["name"] == "RESOURCE_GROUPS"]
        reqs = [r for g in (groups[0] if groups else []) for r in g.get("requirements", [])]
        if len(reqs) != 1 or reqs[0][".type"] != "half_cores" or reqs[0]["slots"] not in (1, 2):
            bad.append("%s: %s" % (t["name"], reqs or "no slot"))
        else:
            kinds[reqs[0]["slots"]] += 1
    if bad:
        sys.exit("FAIL %d of %d tests without one or two half-core slots:\n  %s"
                 % (len(bad), len(tests), "\n  ".join(bad[:20])))
    with open(os.path.join(build, "ctest-resources.json")) as f:
        spec = json.load(f)["local"][0]
    have = spec.get("half_cores") or [{"slots": 0}]
    if have[0]["slots"] != 2 * os.cpu_count():
        sys.exit("FAIL %s/ctest-resources.json: %s half-core slots on %d cores"
                 % (build, have[0]["slots"], os.cpu_count()))
    if not kinds[1] or not kinds[2]:
        sys.exit("FAIL every test takes the same share: %s" % dict(kinds))
    print("TEST SLOTS OK: %d tests, %d on a core's two slots, %d on one" % (len(tests), kinds[2], kinds[1]))


if __name__ == "__main__":
    main()
