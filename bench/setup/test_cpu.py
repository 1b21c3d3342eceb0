"""Each test's CPU against its wall time, from BSD process accounting (acct v3 records, which
`accton` writes as every process exits) joined to ctest's JUnit times: how much of the suite's
wall time leaves a core idle, and which tests mostly wait. Run by bench/setup/test_cpu.sh.

Usage: test_cpu.py PACCT JUNIT BUILD_DIR JOBS
A test's CPU is its process's and every descendant's that exited under it (a process its parent
left behind is reparented and missed: a few tests' servers). The CPU of every process that started
while ctest ran, against JOBS x its wall time, gives the idle core-seconds.
"""
import collections
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

REC = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")  # struct acct_v3 (linux/acct.h), 64 bytes


def comp_t(v):
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent, in clock ticks (AHZ = 100)."""
    return (v & 0x1FFF) << (3 * (v >> 13))


def die(msg):
    sys.exit("test_cpu.py: " + msg)


def records(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    out = []
    for i in range(0, len(data) - REC.size + 1, REC.size):
        f = REC.unpack_from(data, i)
        if f[1] != 3:
            die("%s: not acct v3 records (version %d)" % (path, f[1]))
        out.append(dict(pid=f[6], ppid=f[7], btime=f[8], etime=f[9] / 100.0,
                        cpu=(comp_t(f[10]) + comp_t(f[11])) / 100.0, comm=f[18].split(b"\0")[0].decode(errors="replace")))
    return out


def main():
    if len(sys.argv) != 5 or not sys.argv[4].isdigit() or int(sys.argv[4]) < 1:
        die("usage: test_cpu.py PACCT JUNIT BUILD_DIR JOBS")
    pacct, junit, build, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    recs = records(pacct)
    kids = collections.defaultdict(list)
    for r in recs:
        kids[r["ppid"]].append(r)

    def tree_cpu(r):
        return r["cpu"] + sum(tree_cpu(k) for k in kids.get(r["pid"], ()))

    runs = [r for r in recs if r["comm"] == "ctest"]
    if not runs:
        die("%s: no ctest process recorded" % pacct)
    ctest = max(runs, key=lambda r: r["etime"])
    listed = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    try:
        shown = json.loads(listed.stdout)
    except ValueError:
        die("%s: ctest listed no tests (%s)" % (build, (listed.stderr.strip().splitlines() or ["no output"])[-1]))
    exe, serial, slots = {}, set(), {}
    for t in shown["tests"]:
        if t.get("command"):
            exe[t["name"]] = os.path.basename(t["command"][0])[:15]  # the kernel keeps 15 characters
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("RUN_SERIAL"):
            serial.add(t["name"])
        # RESOURCE_GROUPS as json-v1 shows it: [{"requirements": [{".type": "half_cores", "slots": N}]}]
        slots[t["name"]] = sum(r.get("slots", 0) for g in props.get("RESOURCE_GROUPS") or []
                               for r in g.get("requirements", []))
    try:
        cases = ET.parse(junit).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        die("%s: %s" % (junit, e))
    times = {tc.get("name"): float(tc.get("time") or 0) for tc in cases}
    # ctest's children, matched to tests by executable and elapsed time (the closest first).
    pool = collections.defaultdict(list)
    for c in kids[ctest["pid"]]:
        pool[c["comm"]].append(c)
    rows = []
    for name, wall in sorted(times.items(), key=lambda kv: -kv[1]):
        cands = pool.get(exe.get(name, ""), [])
        if not cands:
            continue  # counted below: matched N of M
        best = min(cands, key=lambda c: abs(c["etime"] - wall))
        cands.remove(best)
        rows.append((name, wall, tree_cpu(best), name in serial))
    t0, t1 = ctest["btime"], ctest["btime"] + ctest["etime"] + 1
    cpu_all = sum(r["cpu"] for r in recs if t0 <= r["btime"] <= t1)
    wall = ctest["etime"]
    idle = jobs * wall - cpu_all
    print("ctest: %.0f s wall at -j%d; every process that started while it ran: %.0f s of CPU; idle %.0f core-s (%.0f%%)"
          % (wall, jobs, cpu_all, idle, 100 * idle / (jobs * wall)))
    s_wall = sum(w for _, w, _, s in rows if s)
    s_cpu = sum(c for _, _, c, s in rows if s)
    # The floor no scheduling beats: serial tests alone, everything else's CPU spread over every core.
    floor = s_wall + max(0.0, cpu_all - s_cpu) / jobs
    print("tests matched %d of %d; serial tests %.0f s wall, %.0f s CPU; with no core ever idle outside them "
          "ctest would take about %.0f s" % (len(rows), len(times), s_wall, s_cpu, floor))
    par = [r for r in rows if not r[3] and r[1] > 0.5]
    for lo, hi in ((0, 0.5), (0.5, 0.8), (0.8, 99)):
        b = [r for r in par if lo <= r[2] / r[1] < hi]
        print("  CPU/wall %.1f-%s: %3d tests, %5.0f s wall, %5.0f s CPU" % (
            lo, "%.1f" % hi if hi < 99 else "", len(b), sum(r[1] for r in b), sum(r[2] for r in b)))
    print("the tests that wait most (wall minus CPU, s):")
    for name, w, c, _ in sorted(par, key=lambda r: -(r[1] - r[2]))[:15]:
        print("  %6.1f  wall %6.1f  CPU %6.1f  %s" % (w - c, w, c, name))
    # A test that holds a core's two half-core slots (tests/CMakeLists.txt) and uses under half of it.
    whole = [r for r in par if slots.get(r[0], 0) >= 2 and r[2] / r[1] < 0.5]
    print("holding a whole core, using under half of it: %d tests, %.0f s wall, %.0f s CPU" % (
        len(whole), sum(r[1] for r in whole), sum(r[2] for r in whole)))
    for name, w, c, _ in sorted(whole, key=lambda r: -(r[1] - r[2])):
        print("  %6.1f  wall %6.1f  CPU %6.1f  %s" % (w - c, w, c, name))


if __name__ == "__main__":
    main()
