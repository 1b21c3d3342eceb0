"""`trainscope verify --patch FILE`: the measured fixes written into the user's own files.

Run as `python -m trainscope_agent.patch [SPEC]` with a JSON spec in the file SPEC or on stdin;
prints one JSON object:
  {"diff": unified diff (paths relative to "root", for `git apply` / `patch -p1` there; written
            as bytes to spec "out" when given: a file in another encoding keeps its bytes),
   "files": [relative paths changed], "edits": [{fix, file, line, what}],
   "refused": [{fix, file, line, reason}]}   (one line per site that gets no patch)

Spec: {"root": the directory the user's command runs in,
       "edits": [{"fix": finding id, "op": OP, "file": absolute path, "line": N, "sha1": the file's
                  hash when the agent recorded the site, ...}]}
  op "keywords": set keywords on the call at file:line; "call" names which call
       ("loader", "optimizer", "training_args", "trainer", "copy"), "keywords": [[name, value], ...];
       "func" (the function the line is in) and "caller" ({file, line, sha1}: the user's line that
       called it): a keyword the call takes from that function's parameters or **kwargs is set in
       the caller's call instead (_through_caller)
  op "wrap":     put the statement at file:line under `with WITH:` ("with": the expression)
  op "compile":  `NAME = torch.compile(NAME)` after the line that builds the model called at file:line
  op "threads":  `torch.set_num_threads(N)` after the imports of file ("value": N), or N in the
                 file's own set_num_threads call
  op "zero_grad": set_to_none=True on every `.zero_grad()` call in file
  op "anomaly":  `set_detect_anomaly(False)` in the call at file:line that turned anomaly detection
                 on (a `detect_anomaly()` block is refused: the block is the user's to remove)

Edits are made from Python's syntax tree (`ast`, with end positions): the exact call or statement
is found, an existing keyword's value is replaced (never a second one added), and every other
byte of the file stays as it was (comments, formatting, CRLF line endings, encoding). Standard
library only, Python 3.8+ (docs/AGENT.md, "How sites become edits").
"""
import ast
import difflib
import hashlib
import io
import json
import os
import re
import stat
import sys
import tokenize

INDENT = "    "
MAX_LINE = 100   # a keyword appended past this column goes on a line of its own

# Where a DataLoader / Tensor.to argument may also come by position (index in the signature).
_POSITIONAL = {
    "loader": {"num_workers": 5, "pin_memory": 7},
    "copy": {"non_blocking": 2},
}


class Refused(Exception):
    """This site gets no patch; the message says why, in one line."""


def _callee(call):
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _matches(kind, call):
    name = _callee(call)
    if kind == "loader":
        return name.endswith("Loader")
    if kind == "training_args":
        return name.endswith("TrainingArguments")
    if kind == "trainer":
        return name == "Trainer"
    if kind == "copy":
        return isinstance(call.func, ast.Attribute) and name in ("to", "cuda")
    if kind == "optimizer":
        dotted = _dotted(call.func)
        return ".optim." in "." + dotted + "." or (name[:1].isupper() and name not in ("DataLoader",))
    if kind == "zero_grad":
        return isinstance(call.func, ast.Attribute) and name == "zero_grad"
    return False


_WHAT = {"loader": "DataLoader(...) call", "training_args": "TrainingArguments(...) call",
         "trainer": "Trainer(...) call", "copy": ".to(...)/.cuda(...) call",
         "optimizer": "optimizer construction"}


class Source:
    """One file: its text as decoded (line endings kept), its tree, and byte <-> text offsets."""

    def __init__(self, path):
        with open(path, "rb") as fh:
            self.raw = fh.read()
        self.encoding, _ = tokenize.detect_encoding(io.BytesIO(self.raw).readline)
        self.text = self.raw.decode(self.encoding)
        try:
            self.tree = ast.parse(self.text, path)
        except SyntaxError as e:
            raise Refused("does not parse (line %s: %s)" % (e.lineno, e.msg))
        # Python's own line breaks only (\r\n, \r, \n), not str.splitlines' form feeds and others.
        self.lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", self.text)
        self.starts = []
        pos = 0
        for ln in self.lines:
            self.starts.append(pos)
            pos += len(ln)
        self.starts.append(pos)
        self.edits = []   # (start, end, new text)

    def offset(self, lineno, col):
        """Text offset of an ast position (col is in UTF-8 bytes)."""
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def start(self, node):
        return self.offset(node.lineno, node.col_offset)

    def end(self, node):
        return self.offset(node.end_lineno, node.end_col_offset)

    def newline(self, lineno=1):
        for ln in self.lines[lineno - 1:] + self.lines:
            for nl in ("\r\n", "\n", "\r"):
                if ln.endswith(nl):
                    return nl
        return "\n"

    def leading(self, lineno):
        ln = self.lines[lineno - 1]
        return ln[:len(ln) - len(ln.lstrip(" \t"))]

    def add(self, start, end, new):
        for s, e, _ in self.edits:
            if start < e and s < end or (start == end == s == e):
                raise Refused("two fixes change the same text here")
        self.edits.append((start, end, new))

    def patched(self):
        text = self.text
        for s, e, new in sorted(self.edits, key=lambda x: (x[0], x[1]), reverse=True):
            text = text[:s] + new + text[e:]
        return text

    def imports_torch(self):
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                if any(a.name == "torch" and a.asname is None for a in node.names):
                    return True
                if any(a.name.startswith("torch.") and a.asname is None for a in node.names):
                    return True   # `import torch.nn` binds `torch` too
        return False


def _parents(tree):
    par = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            par[child] = node
    return par


def _calls_at(src, line):
    """The calls whose text covers `line`, outermost first."""
    out = [n for n in ast.walk(src.tree)
           if isinstance(n, ast.Call) and n.lineno <= line <= n.end_lineno]
    out.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
    return out


def _no_call(src, line, kind):
    for c in _calls_at(src, line):
        if _callee(c) in ("exec", "eval") and isinstance(c.func, ast.Name):
            return Refused("the call is made by code run through %s() here: its text is not in the file"
                           % _callee(c))
    return Refused("no %s at line %d (the file changed since the run?)" % (_WHAT.get(kind, "call"), line))


# ---- keywords on a call ---------------------------------------------------------------------

def set_keywords(src, call, kind, keywords, positional=None):
    """Replaces or adds keyword arguments of `call`; returns what was done, in words. positional:
    {name: index} where an argument may come by position (default: `kind`'s, _POSITIONAL)."""
    # A keyword may also come from a `**mapping`: with one such mapping, the new values go into a
    # merged copy of it (`**{**opts, "num_workers": 4}`), which wins over what the mapping holds and
    # cannot collide with it (`**opts, num_workers=4` raises TypeError when opts has the key). With
    # several, which one holds the key is not known from the text.
    stars = [k for k in call.keywords if k.arg is None]
    if len(stars) > 1:
        raise Refused("the call passes several **mappings (line %d): a keyword may come from any of them; set it "
                      "where they are built" % call.lineno)
    if positional is None:
        positional = _POSITIONAL.get(kind, {})
    new = []
    done = []
    for name, value in keywords:
        existing = [k for k in call.keywords if k.arg == name]
        if existing:
            v = existing[0].value
            old = src.text[src.start(v):src.end(v)]
            if old != value:
                src.add(src.start(v), src.end(v), value)
                done.append("%s=%s (was %s)" % (name, value, old))
            continue
        idx = positional.get(name)
        if idx is not None and (len(call.args) > idx or any(isinstance(a, ast.Starred) for a in call.args)):
            raise Refused("%s is passed by position in this call (line %d): change it there" % (name, call.lineno))
        new.append((name, value))
        done.append("%s=%s" % (name, value))
    if new and stars:
        v = stars[0].value
        s, e = src.start(v), src.end(v)
        while src.text[s - 1] == "(" and src.text[e] == ")":   # `**(a or b)`: its parentheses too
            s, e = s - 1, e + 1
        old = src.text[s:e]
        if old[0] != "(" and not isinstance(v, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Dict)):
            old = "(%s)" % old   # `{**a or b}` does not parse; `{**(a or b)}` does
        merged = ", ".join('"%s": %s' % kv for kv in new)
        src.add(s, e, "{**%s, %s}" % (old, merged))
        return ", ".join(done) + " (over what **%s holds)" % src.text[s:e]
    if new:
        _append_arguments(src, call, ["%s=%s" % kv for kv in new])
    return ", ".join(done)


def _append_arguments(src, call, new):
    close = src.end(call) - 1
    if src.text[close] != ")":
        raise Refused("the call at line %d does not end in ')'" % call.lineno)
    items = list(call.args) + [k.value for k in call.keywords]
    joined = ", ".join(new)
    if not items:
        src.add(close, close, joined)
        return
    last = max(items, key=lambda n: (n.end_lineno, n.end_col_offset))
    last_end = src.end(last)
    between = src.text[last_end:close]   # commas, blanks, comments, line breaks
    nl = src.newline(last.end_lineno)
    # the indentation of the argument lines: the last argument's line when it starts with an
    # argument, else aligned under the first argument
    if last.end_lineno != call.lineno and src.lines[last.end_lineno - 1].strip():
        indent = src.leading(last.end_lineno)
    else:
        first = min(items, key=lambda n: (n.lineno, n.col_offset))
        indent = " " * len(src.lines[first.lineno - 1][:src.start(first) - src.starts[first.lineno - 1]])
    brk = re.search(r"\r\n|\r|\n", between)
    if brk is None:
        # `)` on the last argument's line: append there, or on a line of its own when it gets long
        line_no = last.end_lineno
        line_len = len(src.lines[line_no - 1].rstrip("\r\n")) + len(joined) + 2
        if line_len <= MAX_LINE:
            src.add(last_end, last_end, ", " + joined)
        else:
            src.add(last_end, last_end, "," + nl + indent + joined)
        return
    # `)` on a line below: each new keyword on a line of its own, trailing comma kept as it was
    trailing = between.lstrip(" \t").startswith(",")
    at = last_end + brk.start()
    if trailing:
        src.add(at, at, "".join(nl + indent + k + "," for k in new))
    else:
        lines = "".join(("," if i else "") + nl + indent + k for i, k in enumerate(new))
        if at == last_end:
            src.add(at, at, "," + lines)
        else:
            src.add(last_end, last_end, ",")
            src.add(at, at, lines)


def _site_calls(src, line, kind):
    calls = [c for c in _calls_at(src, line) if _matches(kind, c)]
    if kind == "optimizer":
        # the outermost call: `SGD(model.parameters(), ...)`, not `parameters()`
        calls = [c for c in calls if not isinstance(c.func, ast.Attribute) or c.func.attr != "parameters"]
    return calls


def op_keywords(src, e):
    kind = e.get("call", "")
    if kind == "zero_grad":
        return op_zero_grad(src, e)
    line = int(e["line"])
    calls = _site_calls(src, line, kind)
    if not calls:
        raise _no_call(src, line, kind)
    if kind == "copy":
        return "; ".join(set_keywords(src, c, kind, e["keywords"]) for c in calls) or "already set"
    return set_keywords(src, calls[0], kind, e["keywords"]) or "already set"


# ---- keywords a helper passes on: set at its caller's line -----------------------------------
# A DataLoader or optimizer built inside the user's helper from the helper's own parameters
# (`DataLoader(ds, num_workers=workers)`) or its **kwargs (`DataLoader(ds, **kwargs)`, makemore's
# InfiniteDataLoader) is configured where the helper is called: the knob goes into that call
# (`num_workers=0` in place of `args.num_workers`), and the helper stays as it was. Only where the
# text proves the forwarding; otherwise the site itself is edited (op_keywords).

def _function_of(src, call, func):
    """The def named `func` whose body holds `call`, whether it is a method (its first parameter
    is the instance or class), and its class: (def, method, ClassDef or None); def None if none."""
    par = _parents(src.tree)
    node = par.get(call)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        node = par.get(node)
    if node is None or isinstance(node, ast.Lambda) or node.name != func:
        return None, False, None
    owner = par.get(node)
    static = any(_dotted(d) == "staticmethod" for d in node.decorator_list)
    cls = owner if isinstance(owner, ast.ClassDef) else None
    return node, cls is not None and not static, cls


def _passed_on(fn, call, kind, keywords):
    """The keywords as the helper's caller must pass them ([(name, value)]), or None when one of
    them is not taken from the helper's parameters at this call."""
    a = fn.args
    params = {x.arg for x in getattr(a, "posonlyargs", []) + a.args + a.kwonlyargs}
    varkw = a.kwarg.arg if a.kwarg else None
    stars = [k for k in call.keywords if k.arg is None]
    positional = _POSITIONAL.get(kind, {})
    out = []
    for name, value in keywords:
        given = [k for k in call.keywords if k.arg == name]
        if given:
            v = given[0].value
            if not (isinstance(v, ast.Name) and v.id in params):
                return None
            out.append((v.id, value))
            continue
        idx = positional.get(name)
        if idx is not None and (len(call.args) > idx or any(isinstance(x, ast.Starred) for x in call.args)):
            return None
        if name in params or varkw is None or len(stars) != 1:
            return None   # the helper's own parameter of that name would take it, not **kwargs
        if not (isinstance(stars[0].value, ast.Name) and stars[0].value.id == varkw):
            return None
        out.append((name, value))
    return out


def _through_caller(e, root, sources):
    """The edit made at the helper's caller: (path, line, what), or None (edit the site)."""
    c, func, kind = e.get("caller") or {}, e.get("func") or "", e.get("call", "")
    if not c.get("file") or not c.get("line") or not func or func == "<module>" or kind == "zero_grad":
        return None
    try:
        check_file(e.get("file", ""), root, e.get("sha1", ""))
        site = sources.get(e["file"])
        if site is None:  # kept: the edit at the site, where this falls back to, reads it again
            site = sources[e["file"]] = Source(e["file"])
        calls = _site_calls(site, int(e["line"]), kind)
        if not calls:
            return None
        fn, method, cls = _function_of(site, calls[0], func)
        if fn is None:
            return None
        names = _passed_on(fn, calls[0], kind, e.get("keywords", []))
        if not names:
            return None
        callee = cls.name if func == "__init__" and cls is not None else func
        a = fn.args
        order = [x.arg for x in getattr(a, "posonlyargs", []) + a.args][1 if method else 0:]
        positional = {n: order.index(n) for n, _ in names if n in order}
        path, line = c["file"], int(c["line"])
        check_file(path, root, c.get("sha1", ""))
        src = sources.get(path) or Source(path)
        at = [x for x in _calls_at(src, line) if _callee(x) == callee]
        if len(at) != 1:
            return None
        before = list(src.edits)
        try:
            what = set_keywords(src, at[0], "forwarded", names, positional) or "already set"
        except Refused:
            src.edits = before
            return None
        sources[path] = src
        return path, line, "%s; %s passes it on to the call at %s:%d" % (
            what, callee, _shown(e["file"], root), int(e["line"]))
    except (Refused, KeyError, ValueError, TypeError):
        return None


def op_zero_grad(src, e):
    calls = [n for n in ast.walk(src.tree) if isinstance(n, ast.Call) and _matches("zero_grad", n)]
    if not calls:
        raise Refused("no .zero_grad() call in this file")
    done = 0
    for c in calls:
        if c.args:
            continue   # zero_grad(True) / zero_grad(False): the user's own choice, by position
        if set_keywords(src, c, "zero_grad", [["set_to_none", "True"]]):
            done += 1
    return "set_to_none=True on %d zero_grad() call%s" % (done, "" if done == 1 else "s")


def op_anomaly(src, e):
    line = int(e["line"])
    calls = [c for c in _calls_at(src, line) if _callee(c) in ("set_detect_anomaly", "detect_anomaly",
                                                                 "set_anomaly_enabled")]
    if not calls:
        raise Refused("no set_detect_anomaly(...) call at line %d (the file changed since the run?)" % line)
    c = calls[0]
    if _callee(c) == "detect_anomaly":
        raise Refused("a detect_anomaly() block at line %d: remove the block (it is for debugging)" % line)
    mode = [k for k in c.keywords if k.arg in ("mode", "enabled")]
    target = mode[0].value if mode else (c.args[0] if c.args else None)
    if target is None or isinstance(target, ast.Starred):
        raise Refused("the call at line %d passes its mode in a way that cannot be edited" % line)
    old = src.text[src.start(target):src.end(target)]
    if old == "False":
        return "already False"
    src.add(src.start(target), src.end(target), "False")
    return "%s(False) (was %s)" % (_callee(c), old)


# ---- statements ------------------------------------------------------------------------------

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef,
             ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith)


def _statement_at(src, line):
    best = None
    for n in ast.walk(src.tree):
        if isinstance(n, ast.stmt) and n.lineno <= line <= n.end_lineno:
            if best is None or (n.lineno, -n.end_lineno) >= (best.lineno, -best.end_lineno):
                best = n
    return best


def op_wrap(src, e):
    line = int(e["line"])
    st = _statement_at(src, line)
    if st is None:
        raise Refused("no statement at line %d" % line)
    if isinstance(st, _COMPOUND) or (hasattr(ast, "Match") and isinstance(st, getattr(ast, "Match"))):
        raise Refused("line %d is the header of a compound statement; put the call on a line of its own" % line)
    if not src.imports_torch():
        raise Refused("the file does not `import torch` at the top")
    par = _parents(src.tree)
    p = par.get(st)
    while p is not None:
        if isinstance(p, ast.With) and any("autocast" in ast.dump(i.context_expr) for i in p.items):
            raise Refused("line %d already runs under torch.autocast" % line)
        p = par.get(p)
    # the statement must have its lines to itself (no `a = 1; b = f(x)`)
    first = src.lines[st.lineno - 1]
    if first[:len(first) - len(first.lstrip(" \t"))] != first[:src.start(st) - src.starts[st.lineno - 1]]:
        raise Refused("line %d holds more than one statement" % line)
    for n in ast.walk(src.tree):
        if isinstance(n, ast.stmt) and n is not st and n.lineno <= st.end_lineno and n.end_lineno >= st.lineno \
                and not (n.lineno <= st.lineno and n.end_lineno >= st.end_lineno):
            raise Refused("line %d holds more than one statement" % line)
    for n in ast.walk(st):
        if isinstance(n, (ast.Constant, ast.JoinedStr)) and getattr(n, "lineno", 0) != getattr(n, "end_lineno", 0) \
                and (isinstance(n, ast.JoinedStr) or isinstance(n.value, (str, bytes))):
            raise Refused("the statement at line %d holds a string over several lines (indenting it would change "
                          "the string)" % line)
    indent = src.leading(st.lineno)
    unit = "\t" if indent.startswith("\t") else INDENT
    nl = src.newline(st.lineno)
    for ln in range(st.lineno, st.end_lineno + 1):
        if src.lines[ln - 1].strip():
            src.add(src.starts[ln - 1], src.starts[ln - 1], unit)
    # the `with` line goes in front of the first line's added indentation (one edit at that offset)
    _insert_before_line(src, st.lineno, indent + "with " + e["with"] + ":" + nl)
    return "line %d under `with %s:`" % (st.lineno, e["with"])


def _insert_before_line(src, lineno, text):
    """An insertion at a line's start that another edit (an indent) also starts at: merged."""
    start = src.starts[lineno - 1]
    for i, (s, e, new) in enumerate(src.edits):
        if s == e == start:
            src.edits[i] = (s, e, text + new)
            return
    src.edits.append((start, start, text))


def _insert_after_line(src, lineno, text):
    pos = src.starts[lineno]
    line = src.lines[lineno - 1]
    if not line.endswith(("\n", "\r")):
        text = src.newline() + text.rstrip("\r\n")
    src.add(pos, pos, text)


def _scope_of(src, line):
    """The innermost function around `line`, else the module."""
    best = src.tree
    for n in ast.walk(src.tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno <= line <= n.end_lineno:
            if best is src.tree or n.lineno >= best.lineno:
                best = n
    return best


def _walk_scope(node):
    """Statements of a scope, not entering nested functions or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield child
        yield from _walk_scope(child)


def op_compile(src, e):
    line = int(e["line"])
    calls = [c for c in _calls_at(src, line) if isinstance(c.func, ast.Name)]
    attr = [c for c in _calls_at(src, line) if isinstance(c.func, ast.Attribute) and c.lineno == line]
    if not src.imports_torch():
        raise Refused("the file does not `import torch` at the top")
    scope = _scope_of(src, line)
    loops = [n for n in _walk_scope(scope) if isinstance(n, (ast.For, ast.While)) and n.lineno <= line <= n.end_lineno]
    for c in calls:
        name = c.func.id
        builds = [n for n in _walk_scope(scope)
                  if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.end_lineno < line
                  and any(isinstance(t, ast.Name) and t.id == name
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        builds = [b for b in builds if not any(lp.lineno <= b.lineno <= lp.end_lineno for lp in loops)]
        if not builds:
            continue
        b = max(builds, key=lambda n: n.end_lineno)
        if isinstance(b.value, ast.Call) and _dotted(b.value.func) == "torch.compile":
            raise Refused("`%s` is already torch.compile'd at line %d" % (name, b.lineno))
        mode = e.get("mode") or ""
        code = "%s = torch.compile(%s%s)" % (name, name, ", mode=%s" % json.dumps(mode) if mode else "")
        _insert_after_line(src, b.end_lineno, src.leading(b.lineno) + code + src.newline(b.lineno))
        return "`%s` after line %d, where the model is built" % (code, b.end_lineno)
    if calls:
        raise Refused("`%s` is not built in this function before line %d (a parameter?): compile it where it "
                      "is built" % (calls[0].func.id, line))
    if attr:
        raise Refused("the model is `%s`: compile it where it is built" % _dotted(attr[0].func))
    raise Refused("no call of a model at line %d" % line)


def op_threads(src, e):
    value = str(int(e["value"]))
    for n in ast.walk(src.tree):
        if isinstance(n, ast.Call) and _dotted(n.func) == "torch.set_num_threads" and len(n.args) == 1:
            a = n.args[0]
            old = src.text[src.start(a):src.end(a)]
            if old != value:
                src.add(src.start(a), src.end(a), value)
            return "torch.set_num_threads(%s) at line %d (was %s)" % (value, n.lineno, old)
    if not src.imports_torch():
        raise Refused("the file does not `import torch` at the top")
    body = src.tree.body
    last = None
    for i, n in enumerate(body):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            last = n
        elif last is not None:
            break
        elif not (i == 0 and isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)):
            break
    if last is None or not any(isinstance(n, ast.Import) and n.end_lineno <= last.end_lineno
                               and any(a.name == "torch" or a.name.startswith("torch.") for a in n.names)
                               for n in body):
        raise Refused("`import torch` is not among the file's first imports")
    _insert_after_line(src, last.end_lineno, "torch.set_num_threads(%s)" % value + src.newline(last.end_lineno))
    return "torch.set_num_threads(%s) after the imports (line %d)" % (value, last.end_lineno)


OPS = {"keywords": op_keywords, "wrap": op_wrap, "compile": op_compile, "threads": op_threads,
       "zero_grad": op_zero_grad, "anomaly": op_anomaly}


# ---- the file checks (bad input) --------------------------------------------------------------

def check_file(path, root, sha1):
    """Raises Refused when the file is no place for a patch."""
    if not path:
        raise Refused("no line of your code was recorded for it")
    norm = path.replace("\\", "/")
    parts = norm.split("/")
    if path.startswith("<") or "ipykernel_" in norm or norm.endswith(".ipynb") or "/ipython-input-" in norm:
        raise Refused("a notebook cell (Jupyter runs cells from temporary files): make the change in the cell")
    if "site-packages" in parts or "dist-packages" in parts:
        raise Refused("in an installed package (site-packages): the line to change is in your own code")
    # a module imported from a zip: some directory on its path is the archive itself
    p = norm
    while p and p != "/":
        p = os.path.dirname(p)
        if os.path.isfile(p):
            raise Refused("inside the archive %s: a patch changes files, not a member of a zip" % p)
    if not os.path.exists(path):
        raise Refused("the file no longer exists")
    real, rroot = os.path.realpath(path), os.path.realpath(root)
    if not (real + "/").startswith(rroot.rstrip("/") + "/"):
        raise Refused("outside the directory the command runs in (%s): run verify from your project's directory"
                      % root)
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise Refused("cannot be read (%s)" % e.strerror)
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not a regular file")
    if not (st.st_mode & 0o222) or not os.access(path, os.W_OK):
        raise Refused("read-only: a patch there could not be applied")
    now = hashlib.sha1(raw).hexdigest()
    if not sha1:
        raise Refused("the run did not record the file's hash: run verify again")
    if sha1 != now:
        raise Refused("changed since the run (sha1 %s then, %s now): run verify again on the current code"
                      % (sha1[:12], now[:12]))


def _shown(path, root):
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
        return path if rel.startswith("..") else rel
    except ValueError:
        return path


_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _diff(rel, before, after):
    """A unified diff of two byte strings (the file's own encoding and line endings)."""
    out = []
    name = rel.encode("utf-8", "surrogateescape")
    for ln in difflib.diff_bytes(difflib.unified_diff, _LINES.findall(before), _LINES.findall(after),
                                 b"a/" + name, b"b/" + name, n=3):
        if ln.startswith((b"---", b"+++", b"@@")):
            out.append(ln.rstrip(b"\r\n") + b"\n")
        elif ln.endswith((b"\n", b"\r")):
            out.append(ln)
        else:
            out.append(ln + b"\n\\ No newline at end of file\n")
    return b"".join(out)


def make_patch(spec):
    root = spec.get("root") or os.getcwd()
    sources = {}     # path -> Source
    edits, refused = [], []
    for e in spec.get("edits", []):
        path = e.get("file", "")
        shown = _shown(path, root) if path else "?"
        line = int(e.get("line", 0) or 0)
        where = "%s:%d" % (shown, line) if line else shown
        try:
            op = OPS.get(e.get("op"))
            if op is None:
                raise Refused("unknown edit %r" % e.get("op"))
            if e.get("op") == "keywords":
                up = _through_caller(e, root, sources)
                if up is not None:
                    edits.append({"fix": e.get("fix", ""), "file": _shown(up[0], root), "line": up[1],
                                  "what": up[2]})
                    continue
            check_file(path, root, e.get("sha1", ""))
            src = sources.get(path)
            if src is None:
                src = Source(path)
            before = list(src.edits)
            try:
                what = op(src, e)
            except Refused:
                src.edits = before   # nothing of a refused site stays
                raise
            sources[path] = src
            edits.append({"fix": e.get("fix", ""), "file": shown, "line": line, "what": what})
        except Refused as r:
            refused.append({"fix": e.get("fix", ""), "file": shown, "line": line,
                            "reason": "%s: %s" % (where, r)})
    diff, files = b"", []
    for path in sorted(sources, key=lambda p: _shown(p, root)):
        src = sources[path]
        after = src.patched()
        if after == src.text:
            continue
        rel = _shown(path, root)
        diff += _diff(rel, src.raw, after.encode(src.encoding))
        files.append(rel)
    if spec.get("out"):
        # the patch as bytes: a file in another encoding than UTF-8 keeps its own bytes
        with open(spec["out"], "wb") as fh:
            fh.write(diff)
    return {"diff": diff.decode("utf-8", "replace"), "files": files, "edits": edits, "refused": refused}


def main(argv):
    """`python -m trainscope_agent.patch [SPEC]`: the spec from the file SPEC, else from stdin."""
    try:
        if len(argv) > 1:
            with open(argv[1]) as fh:
                spec = json.load(fh)
        else:
            spec = json.load(sys.stdin)
    except (OSError, ValueError) as e:
        sys.stderr.write("trainscope patch: %s: the spec is not readable JSON: %s\n" % (argv[1] if len(argv) > 1 else "stdin", e))
        return 2
    json.dump(make_patch(spec), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
