"""What keeps tensors alive across steps, and the line that stores them (memory-growth's cause).

At a few step boundaries (steps 8, 24, 56, 120, ...) the agent measures what each of the
user's variables holds: the variables of the user's frames on the stack at that moment (the
training loop's locals, its module's globals) and, a few levels down, their items, values and
attributes (`history`, `logs["logits"]`, `metrics.total`, `model.cache`). For each such path:
the tensors it holds, their bytes (numel x element size: metadata, never the data, so no GPU
sync) and the autograd nodes reachable from them (a running sum `total = total + loss` holds
one tensor whose graph grows every step). A path whose holdings grow between two scans, and
again between the next two, is a leak; the deepest path that carries the growth is named.
Its storing line is found in the source by the syntax tree: an `append`/`extend`/`insert`/
`add`/`setdefault`/item store into that path, or an assignment to it (`self.total = ...`,
`x += ...`), in the function that holds the variable or the class whose instance holds it.

Bounded: at most MAX_ITEMS objects and MAX_NODES graph nodes visited per scan (ROOT_ITEMS and
ROOT_NODES per variable), a long list measured from its ends and scaled to its length, and a scan
never sooner than COST_FACTOR x the last one's cost after it (<= 0.5% of wall time); no reference
kept between scans (paths and numbers only), attributes read from instance dicts only (no property
or __getattr__ of the user's runs), nothing in a DataLoader worker or off the loop thread.
Sent as `site` records with role `leak` (docs/AGENT.md, "Call sites").
"""
import ast
import os
import sys
import time

from . import sites
from .guard import G, fail
from .state import S

MAX_ITEMS = 12000          # objects visited per scan, all variables together
MAX_NODES = 20000          # autograd nodes visited per scan
ROOT_ITEMS = 2000          # ... and per variable, so one big dataset cannot hide the rest
ROOT_NODES = 4000
LONG = 64                  # a longer list is measured from its first and last LONG/2 items, scaled
COST_FACTOR = 200          # the next scan waits at least 200 x the last scan's cost: <= 0.5% of wall time
MAX_DEPTH = 3
MAX_ROOT_FRAMES = 8

_SKIP_MODULE_ATTRS = frozenset(("_parameters", "_buffers", "_forward_hooks", "_forward_pre_hooks",
                                "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
                                "_load_state_dict_pre_hooks", "_non_persistent_buffers_set",
                                "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs",
                                "_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                                "_forward_hooks_always_called"))
_SKIP_OPT_ATTRS = frozenset(("state", "param_groups", "defaults"))


class _Scan:
    last = None        # {path: (tensors, bytes, nodes)} of the previous scan
    growth = {}        # path -> (consecutive intervals it grew steadily in, its last rate per step)
    reported = set()
    target = 8         # the step of the next scan (then 2 x target + 8: 24, 56, 120, ...)
    roots = {}         # path root -> (frame code object, file, function, kind) from the last scan
    classes = {}       # path -> class of the object there (its methods hold `self.x = ...`)
    scan_step = 0      # the step of the last scan
    not_before = 0     # perf_counter_ns before which no scan runs (COST_FACTOR)


def at_step(step):
    if step < _Scan.target or G.off:
        return
    t = time.perf_counter_ns()
    if t < _Scan.not_before:
        return  # rate-limited: the next step boundary tries again
    _Scan.target = 2 * _Scan.target + 8  # 8, 24, 56, 120, 248, ...
    try:
        scan(step)
    except Exception as e:
        fail("leak scan", e)
    _Scan.not_before = t + COST_FACTOR * (time.perf_counter_ns() - t)


class _Budget:
    """What a scan may visit: each variable gets a share, within what the scan has left."""
    __slots__ = ("items", "nodes", "left_items", "left_nodes", "granted_items", "granted_nodes")

    def __init__(self):
        self.left_items, self.left_nodes = MAX_ITEMS, MAX_NODES
        self.items = self.nodes = self.granted_items = self.granted_nodes = 0

    def next_root(self):
        self.left_items -= self.granted_items - max(0, self.items)
        self.left_nodes -= self.granted_nodes - max(0, self.nodes)
        self.items = self.granted_items = min(ROOT_ITEMS, max(0, self.left_items))
        self.nodes = self.granted_nodes = min(ROOT_NODES, max(0, self.left_nodes))


def scan(step):
    torch = S.torch
    if torch is None:
        return
    Tensor = torch.Tensor
    budget = _Budget()
    now = {}
    roots = {}
    _Scan.classes = {}
    f = sys._getframe(1)
    frames = 0
    seen_globals = set()
    while f is not None and frames < MAX_ROOT_FRAMES:
        code = f.f_code
        if sites.is_user_file(code.co_filename):
            frames += 1
            is_module = code.co_name == "<module>"
            scopes = [(f.f_locals, "global" if is_module else "local")]
            if not is_module and id(f.f_globals) not in seen_globals:
                scopes.append((f.f_globals, "global"))
            for scope, kind in scopes:
                if kind == "global":
                    if id(scope) in seen_globals:
                        continue
                    seen_globals.add(id(scope))
                for name, value in list(scope.items()):
                    if name.startswith("__") or name in roots:
                        continue
                    if _uninteresting(value):
                        continue
                    roots[name] = (code, os.path.abspath(code.co_filename), code.co_name, kind)
                    budget.next_root()
                    _measure(name, value, 0, now, budget, Tensor, set())
        f = f.f_back
    prev = _Scan.last
    _Scan.last = now
    _Scan.roots = roots
    if prev is None:
        _Scan.scan_step = step
        return
    grown = {}
    steps = max(1, step - _Scan.scan_step)
    for path, m in now.items():
        p = prev.get(path)
        if p is None:
            continue
        dt, db, dn = m[0] - p[0], m[1] - p[1], m[2] - p[2]
        # Steady: it grew, at no less than half the rate of the interval before (a cache that
        # fills once slows down and stops; a leak keeps its rate).
        rate = (db if db > 0 else (dn if dn > 0 else dt)) / steps
        n, last_rate = _Scan.growth.get(path, (0, 0.0))
        if (dt > 0 or dn > 0 or db > 0) and rate >= 0.5 * last_rate:
            _Scan.growth[path] = (n + 1, rate)
            grown[path] = (dt, db, dn)
        else:
            _Scan.growth[path] = (0, rate) if rate > 0 else (0, 0.0)
    _Scan.scan_step = step
    for path in _leaks(grown):
        if path in _Scan.reported or _Scan.growth.get(path, (0, 0))[0] < 2:
            continue
        _Scan.reported.add(path)
        _report(path, now[path], grown[path], steps)


def _uninteresting(v):
    t = type(v)
    if t in (int, float, str, bytes, bool, type(None), complex):
        return True
    mod = getattr(t, "__module__", "") or ""
    return t.__name__ in ("module", "function", "type", "builtin_function_or_method", "method") or \
        mod.startswith("typing") or mod == "abc"


def _measure(path, v, depth, out, budget, Tensor, stack):
    """(tensors, bytes, graph nodes) held by v, recorded for path and its children."""
    if budget.items <= 0:
        return (0, 0, 0)
    budget.items -= 1
    if isinstance(v, Tensor):
        m = (1, _bytes(v), _graph_nodes(v, budget))
        out[path] = m
        return m
    vid = id(v)
    if vid in stack or depth > MAX_DEPTH + 2:
        return (0, 0, 0)
    t = type(v)
    children = None
    scale = 1.0
    if t in (list, tuple) or (isinstance(v, (list, tuple)) and not hasattr(v, "_fields")):
        if len(v) > LONG:  # a long list (a dataset, a history): its ends, scaled to its length
            scale = len(v) / LONG
            v = list(v[:LONG // 2]) + list(v[-(LONG // 2):])
        children = (("[%d]" % i, x) for i, x in enumerate(v)) if depth < MAX_DEPTH else ((None, x) for x in v)
    elif isinstance(v, dict):
        children = (("[%r]" % (k,), x) for k, x in list(v.items())) if depth < MAX_DEPTH else ((None, x) for x in list(v.values()))
    elif isinstance(v, (set, frozenset)) or t.__name__ == "deque":
        children = ((None, x) for x in list(v))
    else:
        d = _instance_dict(v)
        if d is None:
            return (0, 0, 0)
        module = _is_module(v)
        skip = _SKIP_MODULE_ATTRS if module else (_SKIP_OPT_ATTRS if _is_optimizer(v) else ())
        items = [(k, x) for k, x in list(d.items()) if k not in skip and not k.startswith("__")]
        if module:  # submodules by their attribute name: model.encoder.cache, not model._modules[...]
            subs = d.get("_modules") or {}
            items = [(k, x) for k, x in items if k != "_modules"] + list(subs.items())
        _Scan.classes[path] = t
        children = (("." + k, x) for k, x in items)
    stack.add(vid)
    tn = tb = nn = 0
    # Per-index children of a long list are not kept apart (the list is the path that grows).
    keep_children = t not in (list, tuple)
    for sub, x in children:
        if budget.items <= 0:
            break
        if _uninteresting(x):
            budget.items -= 1
            continue
        child = path + sub if (sub is not None and keep_children) else None
        if child is not None:
            a, b, c = _measure(child, x, depth + 1, out, budget, Tensor, stack)
        else:
            a, b, c = _measure_anon(x, depth + 1, budget, Tensor, stack)
        tn += a
        tb += b
        nn += c
    stack.discard(vid)
    m = (int(tn * scale), int(tb * scale), int(nn * scale))
    if tn or nn:
        out[path] = m
    return m


def _measure_anon(v, depth, budget, Tensor, stack):
    scratch = {}
    return _measure("", v, MAX_DEPTH + 1 if depth > MAX_DEPTH else depth, scratch, budget, Tensor, stack)


def _instance_dict(v):
    try:
        d = object.__getattribute__(v, "__dict__")
    except Exception:
        return None
    return d if isinstance(d, dict) else None


def _is_module(v):
    nn = getattr(S.torch, "nn", None)
    return nn is not None and isinstance(v, nn.Module)


def _is_optimizer(v):
    optim = getattr(S.torch, "optim", None)
    return optim is not None and isinstance(v, optim.Optimizer)


def _bytes(t):
    try:
        return int(t.numel()) * int(t.element_size())
    except Exception:
        return 0


def _graph_nodes(t, budget):
    """Autograd nodes reachable from t's grad_fn (bounded by the scan's budget)."""
    try:
        fn = t.grad_fn
    except Exception:
        return 0
    if fn is None:
        return 0
    n = 0
    todo = [fn]
    # id -> node: the nodes stay referenced for the walk (PyTorch 1.13 hands out a fresh wrapper
    # per next_functions call, so a freed wrapper's id would come back for another node)
    seen = {}
    while todo and budget.nodes > 0:
        node = todo.pop()
        key = id(node)
        if key in seen:
            continue
        seen[key] = node
        n += 1
        budget.nodes -= 1
        try:
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    todo.append(nxt)
        except Exception:
            pass
    return n


def _leaks(grown):
    """The deepest grown paths that carry their parents' growth (a child with >= 90% of it)."""
    out = []
    for path in grown:
        deeper = [q for q in grown if q != path and q.startswith(path) and q[len(path)] in "[."]
        if any(_carries(grown[q], grown[path]) for q in deeper):
            continue
        out.append(path)
    return out


def _carries(child, parent):
    return (child[1] >= 0.9 * parent[1] if parent[1] > 0 else True) and \
           (child[2] >= 0.9 * parent[2] if parent[2] > 0 else True) and \
           (child[0] >= 0.9 * parent[0] if parent[0] > 0 else True)


def _report(path, held, grew, steps):
    root = path.split("[", 1)[0].split(".", 1)[0]
    info = _Scan.roots.get(root)
    if info is None:
        return
    code, file, func, kind = info
    dt, db, dn = grew
    what = []
    if dt > 0:
        what.append("%.3g more tensor%s per step" % (dt / steps, "" if dt == steps else "s"))
    if db > 0:
        what.append("%s more tensor data per step" % _human(db / steps))
    if dn > 0:
        what.append("an autograd graph that grows by %.3g nodes per step" % (dn / steps))
    where = "a local of %s()" % func if kind == "local" else "a global of %s" % os.path.basename(file)
    detail = "%s (%s) keeps %s: %d tensor%s, %s and %d autograd nodes so far" % (
        path, where, ", ".join(what) or "growing", held[0], "" if held[0] == 1 else "s", _human(held[1]), held[2])
    line, lfile, lfunc = _storing_line(path, code, file)
    s = sites.Site("leak", lfile or file, line or code.co_firstlineno, lfunc or func, detail)
    s.text = sites._source_line(s.file, s.line)
    sites.add(s)
    sites.send(S.channel, S.step)


def _human(b):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return "%.3g %s" % (b / size, unit)
    return "%d B" % b


# ----------------------------------------------------------------- the storing line

_STORE_METHODS = ("append", "extend", "insert", "add", "setdefault", "update", "__setitem__", "appendleft")


def _storing_line(path, code, file):
    """(line, file, function) of the statement that stores into path, found in the function (or
    module) that holds its root variable, else in the methods of the class whose attribute it is."""
    parts = _split(path)
    try:
        with open(file, "rb") as fh:
            tree = ast.parse(fh.read(), file)
    except Exception:
        return None, None, None
    scope = _scope_node(tree, code)
    hit = _find_store(scope, parts) if scope is not None else None
    if hit:
        return hit, file, code.co_name
    # metrics.total: the line is in the class of the object that holds the attribute
    # (self.total = ...), in this file or another of the user's.
    if len(parts) >= 2 and parts[-1][0] == ".":
        attr = parts[-1][1:]
        parent = "".join(parts[:-1])
        cls = _Scan.classes.get(parent)
        for klass in (type.mro(cls) if isinstance(cls, type) else ()):
            h = _class_store(klass, attr)
            if h:
                return h
    if scope is not None:
        h = _find_store(scope, parts[:1])
        if h:
            return h, file, code.co_name
    return None, None, None


def _class_store(klass, attr):
    """(line, file, method) of `self.<attr> = / += / .append(...)` in klass's own source."""
    try:
        import inspect
        cfile = inspect.getsourcefile(klass)
        if not cfile or not sites.is_user_file(cfile):
            return None
        with open(cfile, "rb") as fh:
            tree = ast.parse(fh.read(), cfile)
    except Exception:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    h = _find_store(fn, ["self", "." + attr])
                    if h:
                        return h, os.path.abspath(cfile), fn.name
    return None


def _split(path):
    """'logs["a"].b[0]' -> ['logs', '["a"]', '.b', '[0]']"""
    out, i, cur = [], 0, ""
    while i < len(path):
        c = path[i]
        if c in ".[" and cur:
            out.append(cur)
            cur = ""
        if c == "[":
            j = path.index("]", i)
            out.append(path[i:j + 1])
            i = j + 1
            continue
        cur += c
        i += 1
    if cur:
        out.append(cur)
    return out


def _scope_node(tree, code):
    if code.co_name == "<module>":
        return tree
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if first <= code.co_firstlineno <= node.lineno or node.lineno == code.co_firstlineno:
                return node
            best = best or node
    return best


def _target_matches(node, parts):
    """Whether an expression node is the path (a prefix of it, the root with items/attrs)."""
    chain = []
    while True:
        if isinstance(node, ast.Name):
            chain.append(node.id)
            break
        if isinstance(node, ast.Attribute):
            chain.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            chain.append("[]")
            node = node.value
        else:
            return False
    chain.reverse()
    norm = ["[]" if p.startswith("[") else p for p in parts]
    if chain[0] != norm[0] and not (norm[0] == "self" and chain[0] == "self"):
        return False
    return chain == norm[:len(chain)] and len(chain) == len(norm)


def _find_store(scope, parts):
    best = None
    for node in ast.walk(scope):
        line = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STORE_METHODS:
            if _target_matches(node.func.value, parts):
                line = node.lineno
        elif isinstance(node, ast.AugAssign) and _target_matches(node.target, parts):
            line = node.lineno
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if _target_matches(t, parts) and _reads(node.value, parts):
                    line = node.lineno  # x = x + loss: the value refers to itself
                elif isinstance(t, ast.Subscript) and _target_matches(t.value, parts):
                    line = node.lineno  # logs[k] = v
        if line is not None and (best is None or line < best):
            best = line
    return best


def _reads(value, parts):
    for n in ast.walk(value):
        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)) and _target_matches(n, parts):
            return True
    return False
