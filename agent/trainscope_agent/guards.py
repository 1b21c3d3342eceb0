"""The condition that makes a line run every K steps: for the training loop's line that calls an
evaluation (`train_loss, val_loss = evaluate_model(...)` under `if global_step % eval_freq == 0:`),
the innermost `if` of the same function whose body holds the line and whose test has one modulo
(`step % K`), its text, and the same test with K doubled (`global_step % (2 * eval_freq) == 0`):
the finding's fix, written on the user's own condition. Parsed at exit only (one `ast.parse` per
file, a few ms), never on a step's path. docs/AGENT.md, "Call sites"."""
import ast
import copy
import linecache

_trees = {}  # file -> (source, tree) or None


def _parse(file):
    if file not in _trees:
        try:
            src = "".join(linecache.getlines(file))
            _trees[file] = (src, ast.parse(src, file)) if src else None
        except (SyntaxError, ValueError, OSError):
            _trees[file] = None
    return _trees[file]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _path(tree, line):
    """The nodes from the module down to the innermost one that covers `line`."""
    out, node = [], tree
    while True:
        for child in ast.iter_child_nodes(node):
            lo, hi = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if lo is not None and hi is not None and lo <= line <= hi:
                out.append(child)
                node = child
                break
        else:
            return out


def _holds(n, line):
    return bool(n.body) and n.body[0].lineno <= line <= n.body[-1].end_lineno


def _enclosing(tree, line, kinds):
    """The statements of these kinds whose body (not their else) holds `line`, innermost first, in
    the line's own function (a condition or loop outside a nested def is not the line's)."""
    out = []
    for n in reversed(_path(tree, line)):
        if isinstance(n, _SCOPES):
            break
        if isinstance(n, kinds) and _holds(n, line):
            out.append(n)
    return out


def _modulos(test):
    return [n for n in ast.walk(test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]


def _twice(right):
    """K doubled, as a node: 2 * K (a literal: its double)."""
    if isinstance(right, ast.Constant) and isinstance(right.value, int) and not isinstance(right.value, bool):
        return ast.Constant(2 * right.value)
    return ast.BinOp(ast.Constant(2), ast.Mult(), right)


def _one_line(test, double=False):
    """A test written over several lines (llm.c's `if (args.val_loss_every > 0 \\ ... ) \\`), as one
    line (ast.unparse, Python 3.9+), its one modulo's K doubled when asked; None without unparse."""
    unparse = getattr(ast, "unparse", None)
    if unparse is None:
        return None
    if double:
        test = copy.deepcopy(test)
        mod = _modulos(test)[0]
        mod.right = _twice(mod.right)
    return unparse(test)


def test_text(src, test):
    """The test as the user wrote it; one written over several lines, as one line."""
    if test.lineno != test.end_lineno:
        return _one_line(test)
    return ast.get_source_segment(src, test)


def _doubled(src, test):
    """The test's text with its one modulo's right operand doubled, or None."""
    mods = _modulos(test)
    if len(mods) != 1:
        return None
    if test.lineno != test.end_lineno:
        return _one_line(test, double=True)
    text = ast.get_source_segment(src, test)
    right = mods[0].right
    rtext = ast.get_source_segment(src, right)
    if not text or not rtext or right.lineno != test.lineno:
        return None
    if isinstance(right, ast.Constant) and isinstance(right.value, int) and not isinstance(right.value, bool):
        new = str(2 * right.value)
    elif isinstance(right, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        new = "(2 * %s)" % rtext
    else:
        new = "(2 * (%s))" % rtext
    line = src.splitlines()[test.lineno - 1].encode("utf-8")
    start = len(line[test.col_offset:right.col_offset].decode("utf-8", "replace"))
    end = start + len(rtext)
    if text[start:end] != rtext:
        return None
    if start > 0 and end < len(text) and text[start - 1] == "(" and text[end] == ")":
        start, end = start - 1, end + 1  # `% (n // 4)`: its own parentheses, replaced with ours
    return text[:start] + new + text[end:]


def loop_variable(file, line, train=()):
    """The name the innermost `for` of the line's own function counts with (`for epoch in ...`,
    `for step, batch in enumerate(...)`), or None: what an unguarded evaluation's fix counts.
    `train`: the training forward's lines in the same function; the loop must hold them too (an
    evaluation inline in the loop has a loop of its own over the validation batches)."""
    try:
        parsed = _parse(file)
        loops = _enclosing(parsed[1], line, (ast.For, ast.AsyncFor)) if parsed else []
        if train:
            loops = [n for n in loops if all(_holds(n, t) for t in train)]
        if not loops:
            return None
        t, it = loops[0].target, loops[0].iter
        if isinstance(t, ast.Name):
            return t.id
        counted = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate"
        if isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name) and counted:
            return t.elts[0].id
        return None
    except Exception:
        return None


def frequency_guard(file, line, train=()):
    """(the if's line, its test, the test with K doubled), or None. `train`: the training forward's
    lines in the same function; a condition that holds one of them runs the training too."""
    try:
        parsed = _parse(file)
        if parsed is None:
            return None
        src, tree = parsed
        for node in _enclosing(tree, line, ast.If):   # `if args.verbose:` inside `if step % 100 == 0:`
            if any(_holds(node, t) for t in train):
                continue
            doubled = _doubled(src, node.test)
            if doubled is not None:
                return node.lineno, test_text(src, node.test), doubled
        return None
    except Exception:
        return None
