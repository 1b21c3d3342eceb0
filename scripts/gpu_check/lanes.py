"""How gpu-check fits every stage into one device command (issue 33): which stages run alone on the GPU,
which run beside each other in two lanes pinned to separate cores, and which are left out of the budget.

A GPU machine is often lent for minutes; the H100 run (2026-11-27) had to fit every stage into one 10-minute
command. Stages that measure time or the GPU's state (snapshot and watch read an idle GPU, overhead and lab
time steps, max-batch fills the GPU's memory) run alone: nothing else on the GPU, every core theirs. The
stages that check what trainscope *says* (examples: the planted finding; torch2: losses and Dynamo's counters)
run two at a time, each lane pinned to its own cores with taskset, and say in summary.json whom they shared
the GPU with. Stages come in order of value; what the budget cannot hold is skipped with the reason.
Stdlib only.
"""
# Execution order = order of value, except that snapshot and watch come right after env: they need the GPU
# idle, as it is before any workload has run (after one it stays at boost clocks for a while).
ORDER = ["env", "snapshot", "watch", "overhead", "examples", "torch2-compile", "torch2-eager", "lab", "max-batch"]
# Checks of trainscope's output rather than of a time or the GPU's state: these may share the GPU.
BESIDE = {"examples", "torch2-compile", "torch2-eager"}
# What each stage took on the H100 (../shared/gpu-results/2026-11-27-h100, r1-r6; examples 140 s with ddp
# not reached, overhead planned at two pairs of each model at 25-35 s a pair), rounded up: the planner's
# estimate. A stage that runs longer stops at the run's deadline on its own (Stage.left()).
ESTIMATE_S = {"env": 10, "snapshot": 5, "watch": 50, "overhead": 130, "examples": 170, "torch2-compile": 195,
              "torch2-eager": 75, "lab": 60, "max-batch": 25}
RESERVE_S = 15  # writing summary.json and the tars at the end
# Lane 1 runs the examples, whose DataLoader workers need cores of their own: pinned to one core,
# data_starved.py reads as cpu-bound-transforms (the loading computes on the only core), which is right for
# that core and wrong for the example. With fewer usable cores than this plus one, every stage runs alone.
MIN_LANE1_CORES = 4


def core_text(cores):
    """[0, 1, 2, 5] -> "0-2,5" (taskset -c's list form)."""
    cores, parts, i = sorted(cores), [], 0
    while i < len(cores):
        j = i
        while j + 1 < len(cores) and cores[j + 1] == cores[j] + 1:
            j += 1
        parts.append(str(cores[i]) if i == j else "%d-%d" % (cores[i], cores[j]))
        i = j + 1
    return ",".join(parts)


def split_cores(cores, min_lane1=MIN_LANE1_CORES):
    """Lane 1 (examples: DataLoader workers) gets three quarters of the usable cores, lane 2 (torch2: one
    process, Inductor's compile workers) the rest, at least one; None when lane 1 would get fewer than
    MIN_LANE1."""
    cores = sorted(cores)
    n2 = max(1, len(cores) // 4)
    if len(cores) - n2 < max(1, min_lane1):
        return None
    return cores[:-n2], cores[-n2:]


class Plan:
    def __init__(self):
        self.phases = []    # ("alone", name) or ("beside", {1: [names], 2: [names]})
        self.skipped = {}   # name: reason
        self.lanes = None   # (lane 1 cores, lane 2 cores) or None
        self.no_lanes = None  # why there are none
        self.total_s = 0

    def stages(self):
        for kind, what in self.phases:
            if kind == "alone":
                yield what
            else:
                for lane in (1, 2):
                    yield from what[lane]

    def describe(self):
        parts, run = [], []
        for kind, what in self.phases + [("end", None)]:
            if kind == "alone":
                run.append(what)
                continue
            if run:
                parts.append("%s alone" % ", ".join(run))
                run = []
            if kind == "beside":
                parts.append(" beside ".join("lane %d (cores %s): %s" % (lane, core_text(self.lanes[lane - 1]),
                                                                         ", ".join(what[lane])) for lane in (1, 2)))
        text = "; then ".join(parts) or "nothing"
        text += " (estimated %d s)" % self.total_s
        if self.no_lanes:
            text += "; no lanes: %s" % self.no_lanes
        for name, why in self.skipped.items():
            text += "; %s skipped: %s" % (name, why)
        return text


def plan(stages, budget_s, cores, estimate=None, min_lane1=MIN_LANE1_CORES):
    """The stages (a subset of ORDER) laid out for BUDGET_S seconds (None: no limit) on CORES (the usable
    CPU ids; empty where taskset is missing). Each stage, in ORDER, is taken when the plan with it still
    fits; else skipped with the reason."""
    est = dict(ESTIMATE_S, **(estimate or {}))
    p = Plan()
    p.lanes = split_cores(cores, min_lane1)
    if p.lanes is None:
        p.no_lanes = ("no taskset here" if not cores else
                      "%d usable core(s); lane 1 needs %d beside lane 2's" % (len(cores), max(1, min_lane1)))
    limit = None if budget_s is None else budget_s - RESERVE_S
    alone, lane_s, chosen = 0, {1: 0, 2: 0}, []
    for name in [s for s in ORDER if s in stages]:
        shared = name in BESIDE and p.lanes is not None
        if shared:
            lane = 1 if lane_s[1] <= lane_s[2] else 2
            total = alone + max(lane_s[1] + (est[name] if lane == 1 else 0), lane_s[2] + (est[name] if lane == 2 else 0))
        else:
            total = alone + est[name] + max(lane_s.values())
        if limit is not None and total > limit:
            p.skipped[name] = "needs about %d s, %d s of the %d s budget left after the stages before it (run it " \
                              "alone: --stage %s)" % (est[name], max(0, limit - p.total_s), budget_s, name)
            continue
        p.total_s = total
        if shared:
            lane_s[lane] += est[name]
        else:
            alone += est[name]
        chosen.append((name, lane if shared else None))
    # Consecutive shared stages form one phase; stages run in ORDER within each lane. A phase with one lane
    # only has nothing beside it: its stages run alone, on every core.
    for name, lane in chosen:
        if lane is None:
            p.phases.append(("alone", name))
        else:
            if not p.phases or p.phases[-1][0] != "beside":
                p.phases.append(("beside", {1: [], 2: []}))
            p.phases[-1][1][lane].append(name)
    phases = []
    for kind, what in p.phases:
        if kind == "beside" and not (what[1] and what[2]):
            phases += [("alone", n) for n in what[1] + what[2]]
        else:
            phases.append((kind, what))
    p.phases = phases
    return p


def shared_with(intervals):
    """{name: (start, end, is_alone)} -> {name: [the stages whose time overlapped it]}."""
    out = {}
    for a, (s1, e1, _) in intervals.items():
        out[a] = sorted(b for b, (s2, e2, _) in intervals.items() if b != a and s1 < e2 and s2 < e1)
    return out
