"""Forward, backward and optimizer-step hooks, and the settings seen through them.

- Forward: global module hooks (all versions since 1.8) find the outermost module until the first
  step boundary (they disable the fast path for every module call), then are removed; from then
  on plain hooks on that one module time forward. While they are on, the model's repeating
  top-level forward is the weakest step marker (state.FORWARD) and the autocast state is read
  inside forward too (frameworks such as accelerate enter autocast inside `forward`).
- Backward: `torch.autograd.backward` (which `Tensor.backward` calls); the loss value is read
  only when it is a CPU scalar (never a GPU sync). A backward outside optimizer.step() is a step
  marker (state.BACKWARD) and counted (K per optimizer step under gradient accumulation).
- Optimizer: global step hooks where the installed PyTorch has them (2.x), else each optimizer
  class's `step` is wrapped once, at the first construction of that class (1.13). Forward and
  backward run inside step(closure) (LBFGS, Lightning) are forward and backward time, not the
  optimizer's. Optimizers and the model are held by weak references only.
"""
import inspect
import math
import sys
import weakref

from . import anomaly, flops, hooks_copy, hooks_dist, phases, pickling, scripting, sites, warn_through
from .fused import runs_on as fused_runs_on
from .phases import Ph
from .guard import G, check_break, fail, patch, remove_hooks, resolve_compiling
from .state import BACKWARD, FORWARD, OPTIMIZER, S, now

_SEQ = (tuple, list)
_isfinite = math.isfinite
_dead = lambda: None  # noqa: E731  (a weakref that is always dead)


class _Model:
    global_handles = []
    depth = 0
    candidates = {}     # id -> [weakref(module), params, calls]: top-level modules seen so far
    chosen = _dead      # weakref to the model (the user may drop and rebuild it)
    handles = []        # our hooks on the chosen model
    inner = []          # weakrefs to the modules the chosen model wraps (_wrapped)
    inner_handles = []  # our hooks on them, only while one is in eval mode (_on_train_mode)
    inner_open = 0      # evaluation calls of a wrapped module open now (_inner_pre)
    copy_keys = None    # {(class, parameter count)} of the model and the module it wraps (_copy_keys)
    copies = None       # a copy of the model in eval mode -> our hook handles (weak keys, below)
    reported = False
    autocast_dtype = ""
    frozen = False      # torch.compile was called: our hooks never change again (_on_compile)
    fwd_site = None     # sites.Site: the user's line that calls the model in the loop
    fwd_pending = None  # sites.Site of the last training forward before the first backward
    fwd_walks = 0       # forwards walked for it (a loop that never calls backward: kept at 64)
    handover = False    # an evaluation call in flight when the finder was dropped: _fwd_post ends it
    train_step = 0      # S.step of the chosen model's last training forward (_after_step)


M = _Model()
M.chosen = _dead  # on the instance: a function stored on the class would be bound to it
M.copies = weakref.WeakKeyDictionary()
M.grad_enabled = lambda: True  # torch.is_grad_enabled once installed (phases: evaluation or training)


def install(torch):
    M.grad_enabled = torch.is_grad_enabled
    _install_forward_finder(torch)
    _install_train_watch(torch)
    _install_backward(torch)
    _install_optimizer(torch)
    if hasattr(torch, "compile"):
        compile_orig = patch(torch, "compile", None)

        def compile(*args, **kwargs):
            G.compile_seen = True
            try:
                result = warn_through.call(compile_orig, *args, **kwargs)
            finally:
                resolve_compiling(torch)  # Dynamo is loaded now (2.0-2.2 have no torch.compiler)
                from . import hooks_dist
                hooks_dist.register_remaps()
            if not G.off:
                try:
                    _on_compile(torch, args[0] if args else kwargs.get("model"), result)
                except Exception as e:
                    fail("torch.compile", e)
            return result
        compile.__wrapped__ = compile_orig
        compile.__doc__ = getattr(compile_orig, "__doc__", None)
        torch.compile = compile
    resolve_compiling(torch)
    scripting.install(torch, _OURS)  # torch.jit.script(model) must not compile them
    S.add_step_hook(_after_step)
    flops.install(torch)  # the model's FLOPs, counted once in step 3 (flops.py)


def _on_compile(torch, target, result):
    """torch.compile(...) returned and its code has not run yet. Dynamo guards on module hooks
    (the global dicts by their length, a traced module's own), so adding or removing one after
    the first compiled call recompiles the model (issue 31: 2 graphs instead of 1 on an H100).
    Our hooks are therefore made final here, and never change again (M.frozen):
    - a module was compiled (an OptimizedModule came back): the global finder goes now, before
      any compiled call, and our per-module hooks go on the OptimizedModule, whose own hooks run
      outside the compiled frame (OptimizedModule.__call__ is nn.Module.__call__ around the
      Dynamo-wrapped forward): it is the model, timed as in eager mode;
    - anything else (a function, module.compile()'s bound _call_impl, the decorator form): the
      hooks stay exactly as they are now. Traced hook code folds to nothing (G.compiling())."""
    M.frozen = True
    Module = torch.nn.Module
    if isinstance(target, Module) and isinstance(result, Module) and result is not target:
        _drop_finder()
        _hook_model(result)


# ---------------------------------------------------------------- forward

def _install_forward_finder(torch):
    mm = torch.nn.modules.module
    if not (hasattr(mm, "register_module_forward_pre_hook") and
            hasattr(mm, "register_module_forward_hook")):
        return
    M.depth = 0

    def pre(module, inputs):
        if G.compiling() or G.off or S.graph_capture or not S.mine():
            return None
        if S.stop_pending and M.depth == 0:
            S.stop_at(FORWARD)  # --steps: the last step is complete, this forward may start another
        try:
            if M.depth == 0:
                _top_level(module)
                if not M.global_handles:
                    # This call's step boundary chose the model and dropped the finder: no global
                    # post hook ends this call, and the model's own pre hook came too late for it,
                    # but its post hook runs. An evaluation call of the model is ended there; any
                    # other is left alone (an open span with no end would hide the rest of it).
                    if M.chosen() is module:
                        d = phases.Ph.depth
                        _eval_or_train(module, inputs)
                        M.handover = phases.Ph.depth > d
                    return None
                _eval_or_train(module, inputs)
            elif not M.autocast_dtype:
                # Inside the model's forward: autocast entered there (accelerate, HF) shows here.
                M.autocast_dtype = _autocast_dtype(S.torch)
            M.depth += 1
        except Exception as e:
            fail("forward finder", e)
        return None

    def post(module, inputs, output):
        if not G.compiling() and M.depth > 0 and not S.graph_capture and S.mine():
            M.depth -= 1
            if M.depth == 0 and phases.Ph.depth:
                phases.eval_end(now())
        return None

    M.global_handles = [mm.register_module_forward_pre_hook(pre), mm.register_module_forward_hook(post)]


def _top_level(module):
    """A module called outside any other: the largest one seen (before the first step boundary) calling
    again is the FORWARD marker while no better marker was seen."""
    S.touch()
    if not S.first_kind:
        S.first_kind = FORWARD
    key = id(module)
    c = M.candidates.get(key)
    if c is None or c[0]() is not module:
        c = M.candidates[key] = [weakref.ref(module), _count_params(module), 0]
    c[2] += 1
    if S.source <= FORWARD and S.in_opt == 0:
        best = max(M.candidates.values(), key=lambda v: v[1])
        if best is c:
            S.mark_start(FORWARD)


def _eval_or_train(module, inputs):
    """A top-level call before the model is chosen: evaluation (eval mode) opens or extends
    phases.py's span, training closes it, inference in training mode under no_grad does neither
    (phases.call_kind). Modules without parameters (a loss) are neither. The calls' first tensors
    tell a teacher's forward on the training batch from an evaluation (phases.train_event)."""
    c = M.candidates.get(id(module))
    if c is not None and c[1] == 0:
        return
    kind = phases.call_kind(module, S.torch)
    x = inputs[0] if inputs else None
    if kind == phases.EVAL:
        phases.eval_start(now(), module is M.chosen(), x)
    elif kind == phases.TRAIN:
        phases.train_event(x)


def _count_params(m):
    try:
        return sum(p.numel() for p in m.parameters())
    except Exception:
        return 0


def _after_step(step):
    """At the first step boundary after a forward was seen: pick the model, drop the global hooks,
    hook only the model (unless torch.compile froze the hooks: then only name the model). Then
    once: the model record. Then every 16 steps: a dropped model (rebuilt) is found again."""
    if M.global_handles:
        if not M.candidates:
            # No forward yet: a step may end before the model is first called (accelerate's
            # DataLoaderShard, under HF Trainer too, fetches one batch ahead): keep looking.
            return
        if not M.frozen:
            _choose_model()
            return
        if M.chosen() is None:
            best = _best_candidate()
            M.chosen = weakref.ref(best) if best is not None else _dead
    if M.chosen() is None:
        if step & 15 == 0 and S.torch is not None and not M.frozen and not M.global_handles:
            _install_forward_finder(S.torch)  # the model was dropped: find the new one
        return
    if (step & 15 == 0 and 0 < M.train_step <= step - 16 and S.torch is not None and not M.frozen
            and not M.global_handles):
        # Trained before, alive, but not trained for 16 steps: the loop moved on to another model
        # (k-fold cross validation keeps one per fold, Lightning's kfold_cv example). The finder
        # picks the one the next step trains, for one step. (An inference loop never trained one.)
        _install_forward_finder(S.torch)
    if not M.reported and step >= 2:
        _report_model()


def _best_candidate():
    """The model the loop trains: the largest top-level module whose parameters an optimizer holds
    or backward reached; else the largest. A larger module the loop only runs under no_grad (a
    distillation teacher, a DQN's target network, a frozen feature extractor) is not the model:
    its calls inside each step are part of the step, not an evaluation. Once per choice."""
    alive = [(m, n) for m, n in ((ref(), n) for ref, n, calls in M.candidates.values()) if m is not None]
    if not alive:
        return None
    held = _optimized_params()
    trained = [(m, n) for m, n in alive if n > 0 and _trains(m, held)]
    return max(trained or alive, key=lambda mn: mn[1])[0]


def _optimized_params():
    """ids of the parameters the optimizers built so far hold."""
    ids = set()
    for opt in list(O.reported) + list(O.built):
        try:
            for g in opt.param_groups:
                ids.update(id(p) for p in g["params"])
        except Exception:
            pass
    return ids


def _count_held(m, held):
    try:
        return sum(p.numel() for p in m.parameters() if id(p) in held)
    except Exception:
        return 0


def _trains(module, held):
    try:
        return any(id(p) in held or p.grad is not None for p in module.parameters())
    except Exception:
        return False


def _drop_finder():
    for h in M.global_handles:
        h.remove()
    M.global_handles = []
    M.depth = 0


def _choose_model():
    _drop_finder()
    best = _best_candidate()
    M.candidates = {}
    _hook_model(best)


def _hook_model(best):
    remove_hooks(M.handles)
    M.handles = []
    if best is None:
        M.chosen = _dead
        M.copy_keys = None
        return
    M.chosen = weakref.ref(best, _dropped)
    M.handles = [best.register_forward_pre_hook(_fwd_pre), best.register_forward_hook(_fwd_post)]
    pickling.keep_out(type(best), _OURS)  # torch.save(model) must not carry them
    _unhook_inner()
    # Not once torch.compile was called: a compiled model's inner module runs in Dynamo's frame,
    # and its hooks would be new guards.
    M.inner = [] if M.frozen else [weakref.ref(m) for m in _wrapped(best)]
    for ref in M.inner:
        pickling.keep_out(type(ref()), _OURS)
    M.copy_keys = None if M.frozen else _copy_keys(best)


def _dropped(ref):
    """The chosen model was freed: rebuilt, or reloaded for a last evaluation after the loop
    (`model = torch.load(best)`, pytorch/examples' word_language_model). The global finder comes
    back now, not at the next 16th step, which may never come: the new model's calls are seen
    (an evaluation after the last step is evaluation, not "other") and the next step boundary
    picks it as before. A weakref callback: it runs wherever the last reference went."""
    try:
        if ref is M.chosen and not M.frozen and not G.off and not M.global_handles and S.torch is not None:
            _install_forward_finder(S.torch)
    except Exception as e:
        fail("model dropped", e)


def _install_train_watch(torch):
    """Module.train (which eval() calls) watched at class level: a module the chosen model wraps
    gets its evaluation hooks when it goes into eval mode and loses them when it trains again, so
    the training steps never pay for them (a hooked module leaves nn.Module's fast path). Runs
    once per module per train()/eval() call, never per step."""
    Module = torch.nn.Module
    train_orig = patch(Module, "train", None)

    def train(self, mode=True):
        out = train_orig(self, mode)
        if (M.inner or M.copy_keys) and not G.off:
            try:
                _on_train_mode(self, mode)
            except Exception as e:
                fail("train()", e)
        return out

    train.__wrapped__ = train_orig
    train.__doc__ = getattr(train_orig, "__doc__", None)
    Module.train = train


def _on_train_mode(module, mode):
    if M.frozen:
        return  # torch.compile was called: hooks neither come nor go (Dynamo guards on them)
    for ref in M.inner:
        if ref() is module:
            break
    else:
        if M.copy_keys and any(type(module) is t for t, _ in M.copy_keys):
            _on_copy_mode(module, mode)
        return
    if not mode and not M.inner_handles:
        M.inner_handles = [module.register_forward_pre_hook(_inner_pre), module.register_forward_hook(_inner_post)]
    elif mode:
        _unhook_inner()


def _copy_keys(model):
    """What a copy of the model looks like: its class and parameter count, or those of the module
    it wraps (DDP(model) trains; an EMA is a deepcopy of the bare model). A module of another
    size is not a copy: a submodule of the same class (nn.Sequential in nn.Sequential), a
    distillation teacher."""
    keys = {(type(model), _count_params(model))}
    for ref in M.inner:
        m = ref()
        if m is not None:
            keys.add((type(m), _count_params(m)))
    return keys


def _on_copy_mode(module, mode):
    """Another instance of the model's class, put in eval mode: an EMA of the model (timm's
    ModelEmaV3 keeps `deepcopy(model)` in eval mode and `validate()` calls its eval() again), the
    best weights kept aside (`best = copy.deepcopy(model)`). Its calls are evaluation: the same
    hooks as a wrapped module's, while it is in eval mode. A deep copy carries none of ours
    (pickling.keep_out), so it runs free of them until then."""
    if module is M.chosen() or (type(module), _count_params(module)) not in M.copy_keys:
        return
    handles = M.copies.get(module)
    if not mode and handles is None:
        M.copies[module] = [module.register_forward_pre_hook(_inner_pre), module.register_forward_hook(_inner_post)]
    elif mode and handles is not None:
        remove_hooks(M.copies.pop(module))


def _unhook_inner():
    remove_hooks(M.inner_handles)
    M.inner_handles = []
    M.inner_open = 0


def _wrapped(model, levels=2):
    """The modules the chosen model wraps: its one child holding >= 90% of its trained parameters
    (those the optimizers hold; all of them when they hold none of the model's), and that child's,
    down `levels`. The loop trains through the wrapper (DDP, a task module holding the model and
    its loss, as timm's train.py does) and evaluates the inner model directly
    (`validate(model.module)`, timm's `eval_model`): those calls are evaluation too. timm's task
    also holds the model's EMA copy (`--model-ema`), as many parameters as the model but none
    trained: counted, it left no child with 90% and every evaluation unseen."""
    held = _optimized_params()
    count = _count_params
    if held and _count_held(model, held) > 0:
        count = lambda m: _count_held(m, held)  # noqa: E731
    out = []
    total = count(model)
    m = model
    for _ in range(levels):
        if total <= 0:
            break
        big = [c for c in m.children() if count(c) >= 0.9 * total]
        if len(big) != 1:
            break
        m = big[0]
        out.append(m)
    return out


def _fwd_pre(module, inputs):
    if G.compiling() or G.off or S.graph_capture or not S.mine():
        return None
    if S.stop_pending:
        S.stop_at(FORWARD)  # --steps: the last step is complete, this forward may start another
    try:
        if S.window_on:
            S.window.guard()  # a step of many operators: the window's memory (profiler_window.py)
        if G.break_hook:
            check_break("forward")
        if S.source <= FORWARD and S.in_opt == 0:
            S.mark_start(FORWARD)  # may end the program (--steps): after our own bookkeeping
        S.fwd_t0 = now()
        evaluating = trains = False
        if not module.training:  # phases.call_kind, inlined
            if not phases.drives_env():  # else an RL rollout in eval mode: the loop's data
                phases.eval_start(S.fwd_t0, True)
                evaluating = True
        elif M.grad_enabled():
            trains = True
            M.train_step = S.step
            # phases.train_event, called only when it has work: a batch fetched since the last
            # training event (once a step) or an evaluation span to close.
            if Ph.fetch_after_train is not None or Ph.open:
                phases.train_event()
            if not sites.train_codes:  # once, until an optimizer steps (a loop without one)
                sites.train_codes = sites.user_codes(2) or (None,)
        elif phases.nograd_is_eval(inputs):  # a validation batch (or tensor) without model.eval()
            phases.eval_start(S.fwd_t0, True)
            evaluating = True
        # The loop's training forward call: the last one in training mode with autograd on before
        # the first backward (a frame walk each until then, at most 64), never an
        # evaluation's (the hooks may come after the first step, so the first forward they see
        # can be a validation pass) nor a no-grad one that feeds the loop: an RL rollout's policy
        # calls come before each update's (Lightning's PPO example: its rollout's line was named
        # as the line to put under no_sync), and a method that turns autograd off inside itself
        # is called with it on (its Fabric version's `estimate_returns_and_advantages`).
        if M.fwd_site is None and trains:
            M.fwd_pending = sites.where("forward", 2) or M.fwd_pending
            M.fwd_walks += 1
            if M.fwd_walks >= 64:
                _keep_fwd_site()
        if S.first_fwd_in_step:
            S.first_fwd_in_step = False
            if S.gpu is not None and S.cuda_ready:
                S.gpu.forward_start()
        if not M.reported and not M.autocast_dtype:  # read until the model record is sent
            M.autocast_dtype = _autocast_dtype(S.torch)
    except Exception as e:
        fail("forward", e)
    return None


def _fwd_post(module, inputs, output):
    if G.compiling() or G.off or S.graph_capture:
        return None
    if S.fwd_t0 and S.mine():
        t = now()
        S.fwd_ns += t - S.fwd_t0
        S.fwd_t0 = 0
        if phases.Ph.depth:
            phases.eval_end(t)
    elif M.handover:
        M.handover = False
        if phases.Ph.depth:
            phases.eval_end(now())
    return None


def _inner_pre(module, inputs):
    """A module the model wraps, called outside the model's own forward: an evaluation call opens
    phases.py's span (never a step marker: the wrapper's calls are the loop's)."""
    if S.fwd_t0 or G.compiling() or G.off or S.graph_capture or not S.mine():
        return None
    try:
        kind = phases.call_kind(module, S.torch)
        if kind == phases.EVAL:
            phases.eval_start(now(), module not in M.copies)  # a module the model wraps: the trained one
            M.inner_open += 1
        elif kind == phases.TRAIN:
            phases.train_event()
    except Exception as e:
        fail("wrapped forward", e)
    return None


def _inner_post(module, inputs, output):
    if M.inner_open and not S.fwd_t0 and not G.compiling() and not S.graph_capture and S.mine():
        M.inner_open -= 1
        phases.eval_end(now())
    return None


_OURS = (_fwd_pre, _fwd_post, _inner_pre, _inner_post)  # every hook we put on the user's modules


def _autocast_dtype(torch):
    # CUDA autocast first (the usual case), then CPU autocast; each only where the build has it.
    try:
        if torch.is_autocast_enabled():
            if hasattr(torch, "get_autocast_gpu_dtype"):
                return str(torch.get_autocast_gpu_dtype())
            return str(torch.get_autocast_dtype("cuda"))
    except Exception:
        pass
    try:
        if hasattr(torch, "is_autocast_cpu_enabled") and torch.is_autocast_cpu_enabled():
            return str(torch.get_autocast_cpu_dtype())
    except Exception:
        pass
    return ""


def _keep_fwd_site():
    """The forward site waiting for a backward becomes the loop's: at the first backward, or after
    64 training forwards without one (a loop that never calls backward)."""
    M.fwd_site = sites.add(M.fwd_pending) or False
    M.fwd_pending = None


def _report_model():
    M.reported = True
    torch = S.torch
    m = M.chosen()
    inner = getattr(m, "_orig_mod", m)
    dp = isinstance(inner, torch.nn.DataParallel)
    ddp = False
    try:
        ddp = isinstance(inner, torch.nn.parallel.DistributedDataParallel)
    except Exception:
        pass
    # Sharded data parallel: FSDP2's fully_shard makes the module an FSDPModule; FSDP1 wraps it.
    # Looked up in sys.modules only (a script that shards has imported it; we import nothing).
    sharding = ""
    try:
        fs = sys.modules.get("torch.distributed.fsdp")
        if fs is not None:
            fsdp2, fsdp1 = getattr(fs, "FSDPModule", None), getattr(fs, "FullyShardedDataParallel", None)
            if fsdp2 is not None and isinstance(inner, fsdp2):
                sharding = "fsdp2"
            elif fsdp1 is not None and isinstance(inner, fsdp1):
                sharding = "fsdp"
    except Exception:
        pass
    if ddp:
        hooks_dist.ddp_site(inner)  # communication-bound's fix site
    compiled = hasattr(m, "_orig_mod") or G.compile_seen
    dev, dtype, dtypes, n = "", "", set(), 0
    for p in m.parameters():
        if not dev:
            dev, dtype = str(p.device), str(p.dtype)
        dtypes.add(str(p.dtype))
        n += p.numel()
    if M.fwd_site is None and M.fwd_pending is not None:
        _keep_fwd_site()
    S.channel.send_text("model", [
        ("class", type(inner).__name__),
        ("module", type(m).__name__),
        ("params", n),
        ("param_device", dev),
        ("param_dtype", dtype),
        ("param_dtypes", ",".join(sorted(dtypes))),
        ("autocast_dtype", M.autocast_dtype),
        ("compiled", compiled),
        ("data_parallel", dp),
        ("ddp", ddp),
        ("sharding", sharding),
        ("site_file", M.fwd_site.file if M.fwd_site else None),
        ("site_line", M.fwd_site.line if M.fwd_site else None),
    ])


# ---------------------------------------------------------------- backward

def _install_backward(torch):
    ag = torch.autograd
    backward_orig = patch(ag, "backward", None)

    def backward(tensors, *args, **kwargs):
        if G.compiling() or G.off or S.graph_capture or not S.owns(BACKWARD):
            return backward_orig(tensors, *args, **kwargs)
        if S.stop_pending and S.in_opt == 0:
            S.stop_at(BACKWARD, S.source == BACKWARD)
        if S.window_on:
            S.window.guard()  # outside the try below: a failure there is the window's note
        t0 = now()
        try:
            if G.break_hook:
                check_break("backward")
            phases.train_event()
            if not S.t_start:
                S.begin(t0)
            if not S.first_kind:
                S.first_kind = BACKWARD
            if M.fwd_site is None and M.fwd_pending is not None:
                _keep_fwd_site()
            t = tensors
            if isinstance(t, _SEQ) and len(t) == 1:
                t = t[0]
            # A CPU scalar loss is free to read; a GPU one would be a sync: skip it.
            if getattr(t, "is_cuda", True) is False and t.dim() == 0 and t.is_floating_point():
                v = float((hooks_copy.item_orig or type(t).item)(t))
                S.loss = v
                S.loss_seen = True
                if not _isfinite(v):
                    S.nonfinite = True
            if anomaly.A.armed:  # one step's graphs, once per run (anomaly.py)
                anomaly.on_backward(tensors)
        except Exception as e:
            fail("backward", e)
        r = backward_orig(tensors, *args, **kwargs)
        if not G.off:
            try:
                S.bwd_ns += now() - t0
                if S.in_opt == 0:  # inside step(closure) (LBFGS, Lightning) it is part of that step
                    S.bwd_n += 1
                    if S.source <= BACKWARD:
                        S.mark_end(BACKWARD)  # may end the program (--steps), after the backward ran
            except Exception as e:
                fail("backward", e)
        return r

    backward.__wrapped__ = backward_orig
    backward.__doc__ = backward_orig.__doc__
    ag.backward = backward


def _item(t):
    # The original Tensor.item (not our counting wrapper): reading the loss is not the user's sync.
    return (hooks_copy.item_orig or type(t).item)(t)


# ---------------------------------------------------------------- optimizer
#
# The primary optimizer's step ends a loop iteration; the others (a GAN's second optimizer) step
# inside it. Held by weak reference: when the user drops it (an optimizer rebuilt mid-run), the
# next optimizer that steps becomes the primary at once. When the old one stays alive (an LR
# scheduler still holds it) but stops stepping, another optimizer stepping more than
# STALE_FACTOR x (the most steps any other made between two primary steps) + 2 times in a row
# takes over; the steps in between are counted as one.

STALE_FACTOR = 2


class _Opt:
    primary = _dead       # weakref to the primary optimizer
    since = 0             # other optimizers' steps since the primary's last one
    most_between = 0      # the most such steps seen between two primary steps
    reported = weakref.WeakSet()
    last_id = 0           # id of the optimizer seen last (skips the set lookups on most steps)
    built = weakref.WeakSet()   # optimizers built that have not stepped yet
    t0 = {}               # id(opt) -> (t0, fwd+bwd+data ns at entry): 2.x hook path
    sites = weakref.WeakKeyDictionary()  # optimizer -> sites.Site where the user built it


O = _Opt()
O.primary = _dead  # on the instance (see M.chosen)


def _ends_iteration(opt):
    """Whether this optimizer's step() ends the loop iteration (see above)."""
    p = O.primary()
    if p is opt:
        if O.since > O.most_between:
            O.most_between = O.since
        O.since = 0
        return True
    if p is not None:
        O.since += 1
        if O.since <= STALE_FACTOR * O.most_between + 2:
            return False
    O.primary = _ref(opt)
    O.since = 0
    return True


def _ref(obj):
    try:
        return weakref.ref(obj)
    except TypeError:  # a class with __slots__ and no __weakref__: hold it (rare)
        return lambda: obj


def _before_step(opt):
    S.touch()
    if not S.first_kind:
        S.first_kind = OPTIMIZER
    if O.built and opt in O.built:
        O.built.discard(opt)
    if id(opt) != O.last_id:
        O.last_id = id(opt)
        try:
            if opt in O.reported:
                return
            O.reported.add(opt)
        except TypeError:
            pass
        _report_optimizer(opt)
        if not sites.train_from_opt:  # the first optimizer's first step: the loop's own functions
            sites.train_from_opt = True
            sites.train_codes = sites.user_codes(2) or sites.train_codes


def _inner_ns():
    # Time that step(closure) spends in forward, backward and fetches is theirs, not the optimizer's.
    return S.fwd_ns + S.bwd_ns + S.data_ns


def _timed_closure(closure):
    """The closure, its calls' time summed in S.closure_ns.

    A closure holds more than forward and backward: Lightning's runs training_step (the loss, its
    logging) and zero_grad in it. None of that is the update that a fused optimizer speeds up, so
    the step's time less its closures' is the optimizer's (the rest of the closure stays "the rest").
    """
    def closure_timed(*args, **kwargs):
        t = now()
        try:
            return closure(*args, **kwargs)
        finally:
            S.closure_ns += now() - t
    return closure_timed


def _with_timed_closure(args, kwargs):
    """(args, kwargs) of step() with its closure timed, or None when it has none."""
    closure = kwargs.get("closure") if kwargs else None
    if callable(closure):
        kwargs = dict(kwargs)
        kwargs["closure"] = _timed_closure(closure)
        return args, kwargs
    if closure is None and args and callable(args[0]):
        return (_timed_closure(args[0]),) + tuple(args[1:]), kwargs
    return None


def _after_step_call(opt, t0, inner0):
    if G.break_hook:
        check_break("optimizer")
    closure = S.closure_ns - inner0[1]
    S.opt_ns += now() - t0 - max(_inner_ns() - inner0[0], closure)
    S.opt_n += 1
    phases.train_event()
    if _ends_iteration(opt):
        S.mark_end(OPTIMIZER)  # may end the program (--steps)


def _note_built(opt):
    try:
        O.built.add(opt)
    except TypeError:
        return  # not weakly referable: never counted as waiting
    S.opt_waiting = O.built  # a WeakSet: an optimizer dropped before stepping leaves it


def _install_optimizer(torch):
    import importlib
    om = importlib.import_module("torch.optim.optimizer")  # 1.13 deletes the name from torch.optim
    Optimizer = torch.optim.Optimizer
    # Every construction is noted (an optimizer that exists but has not stepped makes weaker
    # step markers provisional); on 1.13 it also wraps the class's step.
    hooks_2x = hasattr(om, "register_optimizer_step_pre_hook") and hasattr(om, "register_optimizer_step_post_hook")
    init_orig = patch(Optimizer, "__init__", None)

    def __init__(self, *args, **kwargs):
        warn_through.call(init_orig, self, *args, **kwargs)
        if G.off:
            return
        try:
            if self not in O.sites:
                O.sites[self] = sites.where("optimizer", 2, caller=True)
        except TypeError:
            pass
        except Exception as e:
            fail("optimizer site", e)
        try:
            _note_built(self)
            if not hooks_2x:
                _wrap_class_step(type(self))
        except Exception as e:
            fail("optimizer wrap", e)

    Optimizer.__init__ = __init__
    if not hooks_2x:
        return

    def pre(opt, args, kwargs):
        if G.compiling() or G.off or not S.owns(OPTIMIZER):
            return None
        if S.graph_capture:
            S.graph_has_opt = True  # captured, not run: the graph's replays are the steps (hooks_graph)
            return None
        if S.stop_pending and S.in_opt == 0:
            S.stop_at(OPTIMIZER, O.primary() is opt)
        timed = None
        try:
            _before_step(opt)
            S.in_opt += 1
            timed = _with_timed_closure(args, kwargs)
            O.t0[id(opt)] = (now(), (_inner_ns(), S.closure_ns))
        except Exception as e:
            fail("optimizer step", e)
        return timed

    def post(opt, args, kwargs):
        if G.compiling() or G.off:
            return None
        entry = O.t0.pop(id(opt), None)
        if entry is None:
            return None
        try:
            S.in_opt -= 1
            _after_step_call(opt, entry[0], entry[1])
        except Exception as e:
            fail("optimizer step", e)
        return None

    h1 = om.register_optimizer_step_pre_hook(pre)
    h2 = om.register_optimizer_step_post_hook(post)
    G.patches.append((_Handle(h1), "remove", None))
    G.patches.append((_Handle(h2), "remove", None))


class _Handle:
    """Lets guard.fail() remove a hook handle like it restores a patched attribute."""

    def __init__(self, h):
        self.h = h

    def __setattr__(self, name, value):
        if name == "remove":
            self.h.remove()
        else:
            object.__setattr__(self, name, value)


def _wrap_class_step(cls):
    if cls.__dict__.get("_trainscope_step"):
        return
    step_orig = patch(cls, "step", None)

    def step(self, *args, **kwargs):
        if G.compiling() or G.off or not S.owns(OPTIMIZER):
            return step_orig(self, *args, **kwargs)
        if S.graph_capture:
            S.graph_has_opt = True  # captured, not run: the graph's replays are the steps (hooks_graph)
            return step_orig(self, *args, **kwargs)
        if S.stop_pending and S.in_opt == 0:
            S.stop_at(OPTIMIZER, O.primary() is self)
        try:
            _before_step(self)
        except Exception as e:
            fail("optimizer step", e)
        try:
            timed = _with_timed_closure(args, kwargs)
            if timed is not None:
                args, kwargs = timed
        except Exception as e:
            fail("optimizer step", e)
        inner0 = (_inner_ns(), S.closure_ns)
        t0 = now()
        S.in_opt += 1
        try:
            r = step_orig(self, *args, **kwargs)
        finally:
            S.in_opt -= 1
        if not G.off:
            try:
                _after_step_call(self, t0, inner0)
            except Exception as e:
                fail("optimizer step", e)
        return r

    for attr in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(step, attr, getattr(step_orig, attr))
        except Exception:
            pass
    step.__wrapped__ = step_orig
    step.hooked = getattr(step_orig, "hooked", False)
    cls.step = step
    cls._trainscope_step = True


def _report_optimizer(opt):
    cls = type(opt)
    d = getattr(opt, "defaults", {}) or {}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    has_fused = "fused" in params
    has_foreach = "foreach" in params
    fused, foreach = d.get("fused"), d.get("foreach")
    on_cuda = fused_here = False
    try:
        p = opt.param_groups[0]["params"][0]
        on_cuda = bool(p.is_cuda)
        fused_here = has_fused and fused_runs_on([p])
    except Exception:
        pass
    if fused:
        impl = "fused"
    elif foreach:
        impl = "foreach"
    elif foreach is None and has_foreach and on_cuda and hasattr(sys.modules.get("torch.optim.optimizer"),
                                                                          "_default_to_fused_or_foreach"):
        impl = "foreach"  # 2.x picks foreach by default for CUDA params
    elif has_foreach or has_fused:
        impl = "single_tensor"
    else:
        impl = "unknown"
    try:
        site = sites.add(O.sites.get(opt))
    except TypeError:
        site = None
    S.channel.send_text("optimizer", [
        ("site_file", site.file if site is not None else None),
        ("site_line", site.line if site is not None else None),
        ("class", cls.__name__),
        ("impl", impl),
        ("fused", fused),
        ("foreach", foreach),
        ("has_fused", has_fused),
        ("fused_on_device", fused_here),
        ("has_foreach", has_foreach),
        ("param_groups", len(opt.param_groups)),
        ("params_on_cuda", on_cuda),
        # How many passes the single-tensor update makes (SGD: the momentum buffer's, weight decay's).
        ("momentum", _number(d.get("momentum"))),
        ("weight_decay", _number(d.get("weight_decay"))),
    ])


def _number(v):
    """A default as a float (a tensor's or a float's), None where it is not a number."""
    try:
        return float(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError, RuntimeError):
        return None
