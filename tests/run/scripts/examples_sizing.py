"""The GPU examples' sizes against examples/README.md's table, without a GPU: each example's sizing
function (healthy.py's size_for, ...) is taken from its source with the module-level constants it
reads, and called with the device properties of an H100 SXM (132 SMs, 80 GB) and of a 20-SM 8 GB
laptop GPU. The scripts cannot be imported (they train at import). Prints "examples sizing: ok"
or the mismatches. Usage: examples_sizing.py EXAMPLES_DIR
"""
import ast
import os
import sys
from types import SimpleNamespace

# What torch.cuda.get_device_properties reports for these cards (total_memory in bytes).
H100 = SimpleNamespace(name="NVIDIA H100 80GB HBM3", multi_processor_count=132, total_memory=85_029_486_592)
LAPTOP = SimpleNamespace(name="a 20-SM laptop GPU", multi_processor_count=20, total_memory=8 * 2**30)

# examples/README.md, "Sizing to the device": (H100, laptop) per script and sizing call.
EXPECTED = {
    ("healthy.py", "size_for", ()): ((9216, 9216), (3072, 3072)),          # width = batch
    ("host_sync.py", "size_for", ()): ((9216, 9216), (5120, 5120)),        # width = batch
    ("growing_memory.py", "size_for", (60,)): ((8192, 3072), (4096, 704)),  # (width, batch), 60 steps
    ("unfused_optimizer.py", "batch_for", (256,)): (131072, 8192),         # batch at the GPU's width 256
}


def load(path, fname):
    """The function `fname` of the script at `path`, with the module's simple constants
    (NAME = <literal or arithmetic>) defined beside it; nothing else of the script runs."""
    tree = ast.parse(open(path).read(), path)
    keep = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == fname:
            keep.append(node)
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id.isupper()):
            try:
                eval(compile(ast.Expression(node.value), path, "eval"), {"__builtins__": {}}, {})
                keep.append(node)
            except Exception:
                pass  # not a constant (reads sys.argv, torch, ...)
    ns = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    if fname not in ns:
        raise SystemExit(f"{path}: no function {fname}")
    return ns[fname], ns


def main():
    d = sys.argv[1]
    bad = []
    for (script, fname, args), (h100, laptop) in EXPECTED.items():
        fn, _ = load(os.path.join(d, script), fname)
        got = fn(H100, *args), fn(LAPTOP, *args)
        want = (h100, laptop)
        print(f"{script} {fname}: H100 {got[0]}, laptop {got[1]} (README: {want[0]}, {want[1]})")
        if got != want:
            bad.append(script)
    print("examples sizing: " + ("ok" if not bad else "MISMATCH in " + ", ".join(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
