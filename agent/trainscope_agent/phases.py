"""The run's time outside the training steps (docs/AGENT.md, "Time account"): evaluation,
compilation and file writes (checkpoints), each as totals at the first step's start, at the last
step's end and at exit, so that trainscope puts every second of the run in exactly one bucket.

Evaluation: a call of a model (a module with parameters, called at the top level) in eval mode
(`module.eval()`) or with autograd off (`torch.no_grad()`, `torch.inference_mode()`): what a
periodic evaluation, a framework's validation loop or sampling does. Consecutive calls make one
span, from the first call's start to the last call's end; the next training event (a forward in
training mode with autograd on, a backward, an optimizer step) closes it. Fetches inside a span,
and the one just before its first call when no training event came between, are the
evaluation's (eval_fetch_ns; the span starts at that fetch), not the training loop's wait.
Compilation: Dynamo's own timings (torch._dynamo.utils.compilation_time_metrics: each frame's
compile, and the backward that AOTAutograd compiles lazily at the first backward), read at a
span's edges, the first step's start, each step's end and exit: never inside the user's calls.
Compilation inside an evaluation span is compilation, not evaluation.
trainscope's own profiler window (its start, stop and export, between two steps: profiler_ns) is
kept apart too: it is our cost, not the training's.
Sent as a `phases` text record at the steps the call sites go out and at exit."""
import sys
import weakref

from . import sites
from .state import S, now


class Ph:
    first_start = 0      # monotonic ns: the first step's start
    last_end = 0         # ... the last step's end
    eval_ns = 0          # closed spans, less the compilation inside them
    # ... those closed before the first training event (a pass at step 0, a baseline before the
    # loop: the first step begins at the first forward, an evaluation's too), -1 until that event.
    # They run whatever the interval (periodic-evaluation's gain).
    eval_before_train_ns = -1
    eval_spans = 0
    eval_spans_trained = 0  # ... of them, spans that called the model the loop trains (not a copy, a teacher)
    eval_calls = 0
    eval_fetch_ns = 0    # fetches inside closed spans (also counted in the steps' data wait)
    io_ns = 0            # torch.save and the other file writes hooks_io times, anywhere
    io_n = 0
    prof_ns = 0          # trainscope's profiler window: start, stop and export (profiler_window.py)
    # The open span: start, latest call end, compilation at its start, fetches seen in it
    # (committed: before a later evaluation call; pending: after the latest one).
    open = False
    trained = False      # the open span called the trained model itself
    t0 = 0
    t1 = 0
    c0 = 0
    fetch_ok = 0
    fetch_pending = 0
    # (start, ns, queued ns, workers' start ns, starts) of the fetches since the last training event:
    # all of them, from the first one's start (accelerate's DataLoaderShard, under HF Trainer too,
    # fetches one batch ahead, so an evaluation pass makes two fetches before its first call).
    fetch_after_train = None
    # The loop's own loading (num_workers=0) waiting on a run queue, outside evaluation spans: the
    # steps' data wait leaves it out (a core, not data, was missing), the account puts it back.
    queued_ns = 0
    # Every wait of the loop's fetches (evaluation's too, as eval_fetch_ns is): the account's data
    # wait. The steps' own data wait misses the first step's when a better marker takes the loop
    # over after it (the optimizer after the first backward), and the first fetch is the one that
    # waits for the workers to start (spawned workers import torch: seconds).
    fetch_ns = 0
    # Of them, the first fetches of each iterator over worker processes, one per worker: the wait
    # for its workers to start (per epoch unless persistent_workers), and how many such iterators.
    start_fetch_ns = 0
    start_fetches = 0
    # ... of them, those inside evaluation spans (a validation loader's workers starting): the
    # evaluation's time, told apart so that worker-restarts and periodic-evaluation never both
    # claim it. start_ok/start_pending follow fetch_ok/fetch_pending.
    eval_start_ns = 0
    eval_starts = 0
    start_ok = start_n_ok = 0
    start_pending = start_n_pending = 0
    # Where batches come from: id() of the dataset of the latest fetch, and of every dataset a
    # training event followed a fetch from (the training data; a validation loader never is).
    fetch_key = None
    train_keys = set()
    # The first tensor of each no-grad training-mode call: id -> (weak reference, step when seen).
    nograd_inputs = {}
    depth = 0            # the evaluation call in progress (nested module calls are inside it)
    call = None          # the site (sites.py role "eval") of the span's latest evaluation call
    caller = None        # ... and the training loop's line that called it (role "eval_call"), or None
    hook = None          # ... and the user's script's line the loop called back into (role "eval_hook"), or None
    call_t = 0           # ... charged from here: each call's site gets the span's time up to the next call
    span_sites = {}      # site -> ns charged in the open span (a training event after it makes them the loop's)
    # What the open span changed, to undo it when it proves to be the step's own inference:
    # (eval_calls at its start, the fetch's queued ns it took over), the sites it counted, and a
    # weak reference to the first tensor its latest call got (a span of another model's calls only).
    span_undo = None
    span_counted = []
    span_x = None
    pre = None           # (eval_ns, compile_ns, io_ns, eval_fetch_ns, prof_ns, queued_ns) at the first step's start
    at_end = None        # ... at the last step's end


_FRAME_KEYS = ("_compile.compile_inner", "_compile.<locals>.compile_inner", "_compile")
_BACKWARD_KEY = "backward._backward_impl"  # the lazily compiled backward (outside the frame's compile)


class _Compile:
    n = -1    # entries in the two lists when `ns` was summed
    ns = 0
    frames = 0  # entries in the frames' list then: the frames compiled


def compile_ns():
    """Dynamo's compile time so far (ns): 0 before torch._dynamo is imported (torch 1.13: always).
    Summed again only when a list grew (each compile appends one entry): at a step end this is two
    dict reads and two len() calls."""
    u = sys.modules.get("torch._dynamo.utils")
    m = getattr(u, "compilation_time_metrics", None) if u is not None else None
    if not m:
        return 0
    f = None
    for k in _FRAME_KEYS:
        f = m.get(k)
        if f:
            break
    b = m.get(_BACKWARD_KEY)
    n = (len(f) if f else 0) + (len(b) if b else 0)
    c = _Compile
    if n != c.n:
        c.n = n
        c.frames = len(f) if f else 0
        c.ns = int(((sum(f) if f else 0.0) + (sum(b) if b else 0.0)) * 1e9)
    return c.ns


def compile_frames():
    compile_ns()  # brings the counts up to date
    return _Compile.frames


def _totals():
    return (Ph.eval_ns, compile_ns(), Ph.io_ns, Ph.eval_fetch_ns, Ph.prof_ns, Ph.queued_ns, Ph.fetch_ns,
            Ph.start_fetch_ns, Ph.start_fetches, Ph.eval_start_ns, Ph.eval_starts)


EVAL, TRAIN, IN_LOOP = 1, 2, 0
FIXED_MAX = 64


def call_kind(module, torch):
    """A model's call (hooks_model inlines this on the chosen model's path):
    EVAL in eval mode (`model.eval()`: evaluation, which Trainer, Lightning, nanoGPT and timm all
    switch to); TRAIN in training mode with autograd on; IN_LOOP in training mode with autograd
    off: inference that feeds the training (an RL rollout or action, a distillation teacher, a
    target network), part of the loop, neither an evaluation nor the end of one. cleanrl's
    ppo.py collects its rollouts that way: counted as evaluation, they were 41% of its run.
    In a process that drives a reinforcement-learning environment (drives_env), eval mode is
    IN_LOOP too: Stable-Baselines3 collects its rollouts with the policy in eval mode.
    Except where its batch says otherwise (nograd_is_eval): a no-grad call on a batch from data the
    training steps never took a batch from is a validation that skipped model.eval()."""
    try:
        if not module.training:
            return IN_LOOP if drives_env() else EVAL
        if torch.is_grad_enabled():
            return TRAIN
        return EVAL if nograd_is_eval() else IN_LOOP
    except Exception:
        return TRAIN


def drives_env():
    """The process loaded a reinforcement-learning environment library (Gymnasium, Gym, dm_env,
    PettingZoo): its model's calls in eval mode are rollouts or actions, the data its training
    steps learn from, not an evaluation. Stable-Baselines3's collect_rollouts puts the policy in eval
    mode under no_grad (its PPO on CartPole: 39% of the run called evaluation, the verdict to
    evaluate less often). An evaluation of such an agent (SB3's EvalCallback) is missed for it: an
    account that says less, never a wrong verdict. Two dict look-ups, on the eval-mode path only."""
    m = sys.modules
    return "gymnasium" in m or "gym" in m or "dm_env" in m or "pettingzoo" in m


def nograd_is_eval(inputs=None):
    """A no-grad call in training mode whose latest batch came from a DataLoader over a dataset
    that no training event ever followed a fetch from: a validation loop without model.eval()
    (a model with no dropout or batch norm behaves the same either way, so many loops skip it).
    A rollout fetches nothing; a teacher runs on the training batch; before the first training
    event nothing is known, and nothing is taken for evaluation. Or, given the call's `inputs`,
    a validation set kept as one tensor (fixed_input)."""
    p = Ph
    if p.fetch_key is not None and p.train_keys and p.fetch_key not in p.train_keys:
        return True
    return inputs is not None and fixed_input(inputs)


def fixed_input(inputs):
    """The call's first argument is the very tensor a no-grad call got before an earlier step:
    `model(X_val)` every epoch on a validation set kept as one tensor, without model.eval(). A
    rollout passes a new observation each call and a teacher is another model. Not in a process
    that drives an RL environment: a simulator's observation buffer, updated in place, is one
    tensor too. Identity by a weak reference (a dead tensor's id may come back); the latest
    FIXED_MAX tensors remembered. 0.4-0.5 us (timeit), on no-grad training-mode calls only."""
    x = inputs[0] if inputs else None
    torch = S.torch
    if x is None or torch is None or not isinstance(x, torch.Tensor) or drives_env():
        return False
    seen = Ph.nograd_inputs
    step = S.step
    entry = seen.get(id(x))
    if entry is not None and entry[0]() is x:
        return step > entry[1]
    if len(seen) >= FIXED_MAX:
        del seen[next(iter(seen))]  # the oldest: a validation tensor comes back within FIXED_MAX others
    try:
        seen[id(x)] = (weakref.ref(x), step)
    except TypeError:
        pass
    return False


def eval_start(t, trained=False, x=None):
    """An evaluation call starts; `trained`: the callee is the model the loop trains (or the module
    it wraps), not an EMA copy or another model (a teacher): such a span is evaluation even after
    every step (rules: periodic-evaluation). `x`: the call's first tensor, where the callee may be
    another model (before the model is chosen, see train_event)."""
    p = Ph
    p.depth += 1
    if p.depth > 1:
        return
    if not p.open:
        p.span_undo, p.span_counted = (p.eval_calls, 0), []
    p.eval_calls += 1
    if trained:
        p.trained = True
    p.span_x = _weak(x)
    if not p.open:
        p.open = True
        p.t0 = p.t1 = t
        p.c0 = compile_ns()
        p.fetch_ok = p.fetch_pending = 0
        p.start_ok = p.start_n_ok = p.start_pending = p.start_n_pending = 0
        fa = p.fetch_after_train
        if fa is not None:  # the batch fetched for this call (no training since): the span starts there
            p.t0, p.fetch_ok, q, p.start_ok, p.start_n_ok = fa
            p.queued_ns -= q  # inside the span's wall time now
            p.span_undo = (p.span_undo[0], q)
        p.call_t = p.t0
    else:
        p.fetch_ok += p.fetch_pending  # fetched between two evaluation calls: the evaluation's
        p.fetch_pending = 0
        p.start_ok += p.start_pending
        p.start_n_ok += p.start_n_pending
        p.start_pending = p.start_n_pending = 0
        _charge(t)
    # The user's line behind this call (a frame walk: evaluation calls are off the step's path). A
    # span often runs several evaluations (a validation loss, a benchmark, sampling); each line is
    # charged its own part, so that the finding names the costliest, not the first.
    p.call = sites.user_call("eval", 3)
    if p.call is not None:
        p.call.count += 1
        p.span_counted.append(p.call)
    # ... and the loop's line that called it, charged alike (a `test(...)` in the step's function),
    # counted once per span: an evaluate() runs many forward calls from one line of the loop.
    # Where that loop calls back into the user's script (a callback that evaluates), the script's
    # line too (role "eval_hook", sites.loop_call), alike.
    caller, hook = sites.loop_call("eval_call", 3, "eval_hook")
    for s, was in ((caller, p.caller), (hook, p.hook)):
        if s is not None and s not in p.span_sites and s is not was:
            s.count += 1
            p.span_counted.append(s)
    p.caller, p.hook = caller, hook


def _weak(x):
    torch = S.torch
    if x is None or torch is None or not isinstance(x, torch.Tensor):
        return None
    try:
        return weakref.ref(x)
    except TypeError:
        return None


def _charge(t):
    """The span's time since the previous charge goes to the latest call's site: its forward and
    the work around it up to the next call (its batch's fetch, the loss, the sampling)."""
    p = Ph
    if t > p.call_t:
        for s in (p.call, p.caller, p.hook):
            if s is not None:
                s.ns += t - p.call_t
                p.span_sites[s] = p.span_sites.get(s, 0) + t - p.call_t
    p.call_t = t


def eval_end(t):
    p = Ph
    if p.depth > 0:
        p.depth -= 1
        if p.depth == 0:
            p.t1 = t


def fetched(t0, ns, dataset=None, queued=0, starts_workers=False, ended=False, warming=False):
    """A fetch's wait. starts_workers: a pass's first fetch over workers (a start, counted);
    warming: one of its first batches, one per worker (the wait is the start's). ended: it raised
    StopIteration (the pass is over, no batch): data wait, but not the start of an evaluation span
    (the epoch's end is not where evaluation begins)."""
    Ph.fetch_key = id(dataset) if dataset is not None else None
    Ph.fetch_ns += ns
    if warming:
        Ph.start_fetch_ns += ns
    if starts_workers:
        Ph.start_fetches += 1
    if ended and not Ph.open:
        Ph.queued_ns += queued
        return
    if Ph.open:
        Ph.fetch_pending += ns
        if warming:
            Ph.start_pending += ns
        if starts_workers:
            Ph.start_n_pending += 1
    else:
        fa = Ph.fetch_after_train
        st = ns if warming else 0
        n = 1 if starts_workers else 0
        Ph.fetch_after_train = (t0, ns, queued, st, n) if fa is None else (
            fa[0], fa[1] + ns, fa[2] + queued, fa[3] + st, fa[4] + n)
        Ph.queued_ns += queued


def train_event(x=None):
    """A forward in training mode, a backward or an optimizer step: the open span ends. `x`: a
    training forward's first tensor. When the span's latest call, of a model that is not the one
    the loop trains, got that very tensor, the span was the step's own inference (a distillation
    teacher's forward on the training batch, seen before the model is chosen: its first call, the
    slowest), not an evaluation: it is undone, its time the step's."""
    if Ph.open and x is not None and not Ph.trained and Ph.span_x is not None and Ph.span_x() is x:
        _undo_span()
    if Ph.fetch_after_train is not None and Ph.fetch_key is not None and len(Ph.train_keys) < 64:
        Ph.train_keys.add(Ph.fetch_key)  # the training data
    Ph.fetch_after_train = None
    if Ph.open:
        close(True)
    if Ph.eval_before_train_ns < 0:
        Ph.eval_before_train_ns = Ph.eval_ns


def _undo_span():
    """The open span was the step's own inference (train_event): its calls, its sites' counts and
    time, and the fetch's queued time it took over go back."""
    p = Ph
    p.eval_calls, q = p.span_undo
    p.queued_ns += q
    for s in p.span_counted:
        s.count -= 1
    for s, ns in p.span_sites.items():
        s.ns -= ns
    _clear_span()


def close(training_follows=False):
    """training_follows: a training event closes the span, so its lines ran between training
    steps (a periodic evaluation's, whatever its schedule); a span open at exit ran after the last
    one (a final test, predictions), and only its lines called nowhere else are one-off."""
    p = Ph
    _charge(p.t1)
    if training_follows:
        for s, ns in p.span_sites.items():
            s.loop_ns += ns
    comp = compile_ns() - p.c0
    p.eval_ns += max(0, p.t1 - p.t0 - comp)
    p.eval_spans += 1
    if p.trained:
        p.eval_spans_trained += 1
    p.eval_fetch_ns += p.fetch_ok
    p.eval_start_ns += p.start_ok
    p.eval_starts += p.start_n_ok
    _clear_span()


def _clear_span():
    """No span open: the state of the one that ended (closed or undone) goes."""
    p = Ph
    p.open = p.trained = False
    p.depth = 0
    p.call = p.caller = p.hook = p.span_x = None
    p.span_sites, p.span_counted = {}, []
    p.fetch_ok = p.fetch_pending = 0
    p.start_ok = p.start_n_ok = p.start_pending = p.start_n_pending = 0


def wrote(ns):
    Ph.io_ns += ns
    Ph.io_n += 1


def profiled(ns):
    Ph.prof_ns += ns


def first_step_start(t):
    if not Ph.first_start:
        Ph.first_start = t
        Ph.pre = _totals()
        from . import startup
        startup.stop_and_send(S.channel)


def at_step(step):
    """A step hook: the totals at the latest step end (the last one's stands at exit); the record
    goes out at steps 16, 64, 256 and every 1024th (the live view's account)."""
    p = Ph
    p.last_end = now()
    p.at_end = _totals()
    if step == 16 or step == 64 or step == 256 or (step & 1023) == 0:
        send(S.channel)


def send(channel, final=False):
    """The `phases` record: cumulative totals; at exit, an open span is closed first."""
    if final and Ph.open:
        close()
    p = Ph
    tot = _totals()
    pre = p.pre or (0,) * len(tot)
    end = p.at_end or tot
    f = [("first_step_t", p.first_start), ("last_step_end_t", p.last_end), ("t", now()),
         ("final", 1 if final else 0), ("eval_spans", p.eval_spans),
         ("eval_spans_trained", p.eval_spans_trained), ("eval_calls", p.eval_calls),
         ("io_n", p.io_n), ("compile_frames", compile_frames()), ("eval_before_train_ns", p.eval_before_train_ns)]
    for name, i in (("eval_ns", 0), ("compile_ns", 1), ("io_ns", 2), ("eval_fetch_ns", 3), ("profiler_ns", 4),
                    ("queued_ns", 5), ("fetch_ns", 6), ("start_fetch_ns", 7), ("start_fetches", 8),
                    ("eval_start_fetch_ns", 9), ("eval_start_fetches", 10)):
        f += [(name, tot[i]), ("pre_" + name, pre[i]), ("end_" + name, end[i])]
    channel.send_text("phases", f)
