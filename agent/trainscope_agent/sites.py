"""Call sites: the line of the user's own code behind each thing the agent measures.

A site is the first frame, walking out from the hook, whose file is the user's: not PyTorch,
not an installed package (site-packages, dist-packages), not the standard library, not the
agent, not generated code (`<string>`, `<frozen ...>`). docs/AGENT.md, "Call sites".

Two kinds of bookkeeping:
- Construction sites (`where()`), resolved once per object: the DataLoader the loop iterates,
  the optimizer, the model's forward call, a framework's configuration (TrainingArguments,
  Lightning's Trainer). Their record carries the site.
- Per-call sites (`hit()`), on the per-step path: `.item()` and other host syncs, host-to-device
  copies, `torch.save` and file writes. The key is the immediate caller's code object and instruction,
  so a call costs one frame lookup, one dict lookup and a few adds (about 0.5 us) (bench/run/agent_cost.sh);
  the walk out to the user's frame runs once per key. At most MAX_KEYS keys: calls from further
  places are counted under one overflow site, never walked.

Sites are sent as `site` text records with running totals (count, host ns, bytes) at steps
16, 64, 256, ... and at exit; the run layer keeps each process's last record per site.
"""
import hashlib
import linecache
import os
import sys
import sysconfig

_getframe = sys._getframe
MAX_KEYS = 256
MAX_WALK = 64          # frames walked out from a hook at most
_AGENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_roots():
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_paths().get(key)
        except Exception:
            p = None
        if p:
            roots.add(os.path.realpath(p))
    for p in (sys.base_prefix, sys.prefix, sys.exec_prefix):
        roots.add(os.path.realpath(os.path.join(p, "lib", "python%d.%d" % sys.version_info[:2])))
    roots.add(os.path.realpath(_AGENT_DIR))
    return tuple(sorted(r.rstrip("/") + "/" for r in roots if r))


_ROOTS = _library_roots()
_user_file = {}    # co_filename -> bool


def is_user_file(filename):
    r = _user_file.get(filename)
    if r is None:
        r = _classify(filename)
        _user_file[filename] = r
    return r


def _classify(filename):
    if not filename or filename.startswith("<"):
        return False  # <string>, <frozen importlib._bootstrap>, <stdin>: no file to point at
    parts = filename.replace("\\", "/").split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    try:
        real = os.path.realpath(filename)
    except Exception:
        real = filename
    if "site-packages" in real or "dist-packages" in real:
        return False
    for root in _ROOTS:
        if real.startswith(root):
            return False
    return True


class Site:
    __slots__ = ("role", "file", "line", "func", "text", "count", "ns", "bytes", "pageable",
                 "blocking", "detail", "sent", "sent_ns", "loop_ns", "starts", "start_ns", "restarts",
                 "restart_ns", "rebuilds", "rebuild_ns", "caller", "guard", "loop_var")

    def __init__(self, role, file, line, func, detail=""):
        self.role = role
        self.file = file
        self.line = line
        self.func = func
        self.text = ""
        self.count = self.ns = self.bytes = self.pageable = self.blocking = 0
        self.loop_ns = 0  # eval: of ns, the time in spans a training step followed
        # dataloader: its iterators over worker processes (workers starting) and the wait in their
        # first fetches, one per worker; of them, restarts (a loader whose workers had started before: a new pass without
        # persistent_workers) and rebuilds (a new loader over a dataset already loaded here).
        self.starts = self.start_ns = self.restarts = self.restart_ns = self.rebuilds = self.rebuild_ns = 0
        self.detail = detail
        self.sent = self.sent_ns = -1
        # A construction site inside a function: the user's line that called that function (file,
        # line, function), when it is the user's own frame. A helper that forwards its parameters
        # or **kwargs into the object (makemore's InfiniteDataLoader) is configured there.
        self.caller = None
        # eval_call / eval_hook: the `if step % K == 0:` that makes the line run every K steps, as
        # (its line, its test, the test with K doubled) (guards.py, read at exit; () when none).
        self.guard = None
        self.loop_var = ""   # ... and the name its innermost `for` counts with (guards.py, at exit)

    def fields(self):
        return [("role", self.role), ("file", self.file), ("line", self.line), ("func", self.func),
                ("text", self.text or _source_line(self.file, self.line)), ("count", self.count),
                ("ns", self.ns), ("bytes", self.bytes), ("pageable", self.pageable),
                ("blocking", self.blocking), ("loop_ns", self.loop_ns), ("starts", self.starts),
                ("start_ns", self.start_ns), ("restarts", self.restarts), ("restart_ns", self.restart_ns),
                ("rebuilds", self.rebuilds), ("rebuild_ns", self.rebuild_ns),
                ("detail", self.detail or None),
                ("sha1", _file_sha1(self.file))] + self._extra_fields()

    def _extra_fields(self):
        out = []
        if self.guard:
            out = [("guard_line", self.guard[0]), ("guard", self.guard[1]), ("guard_doubled", self.guard[2])]
        if self.loop_var:
            out.append(("loop_var", self.loop_var))
        if not self.caller:
            return out
        file, line, func = self.caller
        return out + [("caller_file", file), ("caller_line", line), ("caller_func", func),
                      ("caller_text", _source_line(file, line)), ("caller_sha1", _file_sha1(file))]


def _source_line(file, line):
    try:
        return linecache.getline(file, line).strip()[:300]
    except Exception:
        return ""


_sha = {}


def _file_sha1(file):
    """The file's hash when the site was recorded: a patch written later (verify --patch) is
    refused when the file changed since."""
    h = _sha.get(file)
    if h is None:
        try:
            with open(file, "rb") as fh:
                h = hashlib.sha1(fh.read()).hexdigest()
        except Exception:
            h = ""
        _sha[file] = h
    return h or None


def outside_agent(f):
    """The first frame from f outwards that is not the agent's own (our wrappers stack: an
    override's DataLoader.__init__ around the hook's)."""
    n = 0
    while f is not None and n < MAX_WALK and f.f_code.co_filename.startswith(_AGENT_DIR):
        f = f.f_back
        n += 1
    return f


def user_frame(f):
    """The first user frame from f outwards, or None."""
    n = 0
    while f is not None and n < MAX_WALK:
        if is_user_file(f.f_code.co_filename):
            return f
        f = f.f_back
        n += 1
    return None


def where(role, depth=2, detail="", caller=False):
    """A construction site: the user's line that built the object (walked once). None when no
    user frame is on the stack (built by a library at import, say). caller: also the line that
    called the site's function, when that is the user's own frame (not a framework's)."""
    try:
        f = user_frame(_getframe(depth))
        if f is None:
            return None
        s = Site(role, os.path.abspath(f.f_code.co_filename), f.f_lineno, f.f_code.co_name, detail)
        s.text = _source_line(s.file, s.line)
        b = f.f_back
        if caller and b is not None and f.f_code.co_name != "<module>" and is_user_file(b.f_code.co_filename):
            s.caller = (os.path.abspath(b.f_code.co_filename), b.f_lineno, b.f_code.co_name)
        return s
    except Exception:
        return None


class _Table:
    by_key = {}      # (role, id(code), instruction) -> Site (keys of one user line share it)
    codes = []       # the code objects of those keys, kept alive (their ids stay unique)
    by_site = {}     # (role, file, line) -> Site
    order = []       # Sites in first-seen order (sent in this order)
    overflow = {}    # role -> Site for calls past MAX_KEYS


def hit(role, ns, nbytes=0, pageable=0, blocking=0, depth=2, direct=False):
    """One call of a per-call site (the caller of the hook that calls this is at `depth`).
    direct: only a call made by the user's own code has a site (a host sync inside a library,
    such as a sampler's seed `.item()`, is not the user's line to change); otherwise the walk goes
    out to the user's line that led to it (a copy made by a framework: its `trainer.train()`)."""
    f = _getframe(depth)
    # id(), not the code object: a code object hashes its whole content (microseconds); the
    # object is pinned in _Table.codes, so its id is never reused while the key lives.
    key = (role, id(f.f_code), f.f_lasti)  # the call's instruction: cheaper than f_lineno
    s = _Table.by_key.get(key)
    if s is None:
        s = _resolve(role, f, key, direct)
    s.count += 1
    s.ns += ns
    if nbytes:
        s.bytes += nbytes
        s.pageable += pageable
        s.blocking += blocking


def user_call(role, depth=2):
    """A per-call site for calls made far from the user's line, where hit()'s immediate caller is
    PyTorch's own (a model's forward runs inside nn.Module's call machinery): the walk out to the
    user's frame runs at every call, and its frame and instruction are the key. A few frames per
    call: for calls off the training step's path (evaluation). None without a user frame."""
    u = user_frame(_getframe(depth))
    if u is None:
        return None
    key = (role, id(u.f_code), u.f_lasti)
    s = _Table.by_key.get(key)
    return s if s is not None else _resolve(role, u, key, True)


# The code objects of the user's frames under the first optimizer step (else the first training
# forward), innermost first (hooks_model, once each): loop_call() finds where an evaluation leaves
# the training loop's code.
train_codes = ()
train_from_opt = False


def user_codes(depth=2):
    """The code objects of the user's frames on the stack, innermost first (one walk)."""
    codes = []
    f, n = _getframe(depth), 0
    while f is not None and n < MAX_WALK:
        if is_user_file(f.f_code.co_filename):
            codes.append(f.f_code)
        f, n = f.f_back, n + 1
    return tuple(codes)


def _framework_file(filename):
    """An installed package's file other than PyTorch's own (its no_grad/inference_mode
    decorators wrap a user's evaluation function): a framework's loop called the code above it."""
    f = filename.replace("\\", "/")
    return ("/site-packages/" in f or "/dist-packages/" in f) and "/torch/" not in f


_entry = []  # [the entry script's absolute path, or None], once


def _entry_file():
    """The script the user ran (`__main__`'s file; `python -m pkg.mod`: that module's), or None."""
    if not _entry:
        m = sys.modules.get("__main__")
        f = getattr(m, "__file__", None)
        _entry.append(os.path.abspath(f) if f else None)
    return _entry[0]


_abs = {}  # co_filename -> its absolute path


def _abspath(filename):
    a = _abs.get(filename)
    if a is None:
        a = _abs[filename] = os.path.abspath(filename)
    return a


def _site_at(role, f):
    key = (role, id(f.f_code), f.f_lasti)
    s = _Table.by_key.get(key)
    return s if s is not None else _resolve(role, f, key, True)


def loop_call(role, depth=2, hook_role=None):
    """The line where the training loop's code calls an evaluation: walking out from the
    evaluation's forward, the first user frame whose function also ran under the training forward
    (the deepest function the two share), at the line it is at now (GAT's `test(...)` in its
    `train_iter`, a `validate()` in the epoch loop); the forward's own line where that frame is
    the forward's own (an evaluation written inline in the loop, as llm.c's train_gpt2.py scores
    its validation batches). None where a framework's frames lie between (Lightning, Hugging Face:
    their knobs are named instead), or before a training forward. A walk of a few frames per evaluation call: off the step's path.
    Returns (loop's site, hook's site). The hook (role hook_role): where the loop lies in a module
    of the user's other than the script they ran (minGPT's Trainer.run) and calls back into that
    script (a callback that evaluates every K steps), the script's outermost line on the way to the
    evaluation: the loop's line runs every callback, that line is where the script chose to
    evaluate (the evaluation's forward itself, where the callback calls the model). None otherwise."""
    if not train_codes:
        return None, None
    f, n, first, crossed, hook = _getframe(depth), 0, None, False, None
    entry = _entry_file() if hook_role else None
    while f is not None and n < MAX_WALK:
        code = f.f_code
        if is_user_file(code.co_filename):
            if any(code is c for c in train_codes):  # identity: == compares code objects' content
                if crossed:
                    return None, None
                if first is None:  # inline in the loop: the evaluation's forward line is the loop's own
                    return _site_at(role, f), None
                if hook is not None and _abspath(code.co_filename) == entry:
                    hook = None  # the loop is in the script itself: its line is the script's
                return _site_at(role, f), (_site_at(hook_role, hook) if hook is not None else None)
            if first is None:
                first = f
            if entry is not None and _abspath(code.co_filename) == entry:
                hook = f
        elif first is not None and _framework_file(code.co_filename):
            crossed = True
        f, n = f.f_back, n + 1
    return None, None


def _resolve(role, f, key, direct=False):
    T = _Table
    if len(T.by_key) >= MAX_KEYS:
        s = T.overflow.get(role)
        if s is None:
            s = T.overflow[role] = Site(role, "", 0, "", "calls from more places than the agent keeps")
            T.order.append(s)
        return s
    u = f if is_user_file(f.f_code.co_filename) else (None if direct else user_frame(f))
    if u is None:
        file, line, func = "", 0, ""
    else:
        file, line, func = os.path.abspath(u.f_code.co_filename), u.f_lineno, u.f_code.co_name
    skey = (role, file, line)
    s = T.by_site.get(skey)
    if s is None:
        s = T.by_site[skey] = Site(role, file, line, func)
        T.order.append(s)
    T.by_key[key] = s
    T.codes.append(f.f_code)
    return s


def add(site):
    """A construction site joins the table (sent with the others)."""
    if site is None:
        return None
    key = (site.role, site.file, site.line)
    s = _Table.by_site.get(key)
    if s is None:
        _Table.by_site[key] = site
        _Table.order.append(site)
        return site
    return s


def send(channel, step, final=False):
    """Sends every site whose totals changed since it was last sent. final (at exit): the lines
    that call an evaluation get the condition that runs them every K steps (guards.py)."""
    if channel is None:
        return
    if final:
        from . import guards
        for s in list(_Table.order):
            if s.role in ("eval_call", "eval_hook") and s.file and s.guard is None:
                # The training forward's lines in the same function: a condition or loop around
                # them is the training's too, not what runs the evaluation every K steps.
                train = [t.line for t in _Table.order if t.role == "forward" and t.file == s.file and t.func == s.func]
                s.guard = guards.frequency_guard(s.file, s.line, train) or ()
                s.loop_var = guards.loop_variable(s.file, s.line, train) or ""
                if s.guard or s.loop_var:
                    s.sent = -1  # send it again, with its condition
    for s in list(_Table.order):
        if s.sent == s.count and s.sent_ns == s.ns + s.loop_ns and s.sent >= 0:
            continue
        if s.count == 0 and s.sent < 0 and s.role in ("eval", "eval_call", "eval_hook"):
            continue  # its one call was the step's own inference after all (phases.train_event)
        s.sent, s.sent_ns = s.count, s.ns + s.loop_ns
        channel.send_text("site", s.fields() + [("steps", step)])


def at_step(step):
    """Step hook: sites at steps 16, 64, 256, ... (a run killed without atexit keeps them)."""
    if step & 15 or step & (step - 1):
        return
    if (step.bit_length() - 1) % 2 == 0:
        from .state import S
        send(S.channel, step)
