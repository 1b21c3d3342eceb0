"""The condition that runs an evaluation every K steps (agent/trainscope_agent/guards.py), read from
real files: the innermost `if` of the line's own function whose body holds it, with one modulo in
its test, and that test with K doubled, the rest of the text as written. Each expectation below is
written by hand from the source. Prints EVAL GUARDS OK."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "agent"))
from trainscope_agent import guards  # noqa: E402

SRC = '''def train():
    for step in range(100):
        if global_step % eval_freq == 0:
            train_loss, val_loss = evaluate_model(
                model, train_loader)
        if step > 0 and step % 500 == 0:
            evaluate(model)
        if (step + 1) % cfg.eval_every == 0 or last:
            evaluate(model)
        if step % 10 == 0:
            def inner():
                evaluate(model)
        if args.eval:
            evaluate(model)
        if step % a + b == 0:
            evaluate(model)
        else:
            evaluate(model)
        if step % 100 == 0 and step % 7 == 0:
            evaluate(model)
        if it % (n // 4) == 0:  # évaluer
            evaluate(model)
        if step % 100 == 0:
            if args.verbose:
                evaluate(model)
'''

WANT = {
    4: (3, "global_step % eval_freq == 0", "global_step % (2 * eval_freq) == 0"),
    5: (3, "global_step % eval_freq == 0", "global_step % (2 * eval_freq) == 0"),   # a call's second line
    7: (6, "step > 0 and step % 500 == 0", "step > 0 and step % 1000 == 0"),       # a literal K: doubled
    9: (8, "(step + 1) % cfg.eval_every == 0 or last", "(step + 1) % (2 * cfg.eval_every) == 0 or last"),
    12: None,   # in a function defined under the condition: the condition is not the line's
    14: None,   # no modulo: not a frequency
    16: (15, "step % a + b == 0", "step % (2 * a) + b == 0"),
    18: None,   # the else branch
    20: None,   # two modulos: which is the frequency is not in the text
    22: (21, "it % (n // 4) == 0", "it % (2 * (n // 4)) == 0"),
    25: (23, "step % 100 == 0", "step % 200 == 0"),   # an inner if without a modulo: the outer one
    2: None,    # the loop itself
}

fails = []
d = tempfile.mkdtemp(prefix="ts_guards_")


def check_lines(label, read, name, src, want):
    """Writes src to d/name and compares read(path, line) with want[line] for every line."""
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(src)
    for line, expected in sorted(want.items()):
        got = read(path, line)
        if got != expected:
            fails.append("%s %d: %r, expected %r" % (label, line, got, expected))
            print("FAIL %s %d: %r, expected %r" % (label, line, got, expected))
        else:
            print("ok %s %d" % (label, line))


check_lines("line", guards.frequency_guard, "train.py", SRC, WANT)
# The name the innermost `for` of the line's own function counts with: what an unguarded
# evaluation's fix counts.
LOOPS = '''
def fit(model):
    for epoch in range(10):
        for step, (x, y) in enumerate(loader):
            train_step(x, y)
        evaluate(model)
    for x, y in loader:
        evaluate(model)
    for i, batch in zip(range(3), loader):
        evaluate(model)
evaluate(model)
'''
check_lines("loop line", guards.loop_variable, "loops.py", LOOPS,
            {6: "epoch", 5: "step", 8: None, 10: None, 11: None, 2: None})
# An evaluation written inline in the loop (its forward's line is the loop's own), under a test
# written over three lines, and the training forward's line (10) given: a condition or loop that
# holds the training forward runs the training too. A test over several lines comes back as one
# line (ast.unparse: the `and` that is the outer `and`'s first operand keeps its parentheses).
INLINE = '''for step in range(steps + 1):
    last = step == steps
    if (args.eval_every > 0 \\
            and (step % args.eval_every == 0 or last)) \\
            and val is not None:
        with torch.no_grad():
            for _ in range(args.eval_batches):
                out = model(xv)
    if step % accum == 0:
        loss = model(x)
        score = model(xv)
    loss.backward()
'''
check_lines("inline line", lambda path, line: guards.frequency_guard(path, line, [10]), "inline.py", INLINE, {
    8: (3, "(args.eval_every > 0 and (step % args.eval_every == 0 or last)) and val is not None",
        "(args.eval_every > 0 and (step % (2 * args.eval_every) == 0 or last)) and val is not None"),
    11: None,   # `if step % accum == 0:` holds the training forward too
})
check_lines("inline line, no training line", guards.frequency_guard, "inline.py", INLINE,
            {11: (9, "step % accum == 0", "step % (2 * accum) == 0")})
check_lines("inline loop", lambda path, line: guards.loop_variable(path, line, [10]), "inline.py", INLINE,
            {8: "step", 11: "step"})
check_lines("inline loop, no training line", guards.loop_variable, "inline.py", INLINE, {8: "_"})
bad = os.path.join(d, "broken.py")
with open(bad, "w") as fh:
    fh.write("if step % 10 == 0:\n    evaluate(\n")
if guards.frequency_guard(bad, 2) is not None or guards.frequency_guard(os.path.join(d, "missing.py"), 3) is not None:
    fails.append("a file that does not parse, or is missing, has no guard")
    print("FAIL a file that does not parse, or is missing, has no guard")
if fails:
    sys.exit(1)
print("EVAL GUARDS OK")
