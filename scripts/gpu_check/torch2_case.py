"""One PyTorch 2.x training case for `gpu-check --stage torch2`, run once plainly and once under
`trainscope run` with the same seed; the two result files must agree (same losses, same Dynamo
graph-break and graph counts).

    python torch2_case.py CASE RESULT.json [--steps N] [--seed S]

CASE: compile_default | compile_reduce_overhead | compile_aot_eager | compile_cudagraphs | cuda_graph |
bf16_autocast | fused_adamw. Writes RESULT.json: {"case", "losses": [...], "dynamo": {"graph_breaks", "break_reasons",
"unique_graphs", "calls_captured"}, "torch", "device"}. An unsupported case writes
{"unsupported": reason} and exits 0; a case that fails writes {"error": text} and exits 1.
"""
import json
import os
import sys
import traceback

# compile_aot_eager and compile_cudagraphs run Dynamo (and CUDA graphs) without Inductor's code
# generation, which needs a C compiler for Triton: on a machine without one they still check
# that trainscope adds no graph break and changes no loss.
CASES = ("compile_default", "compile_reduce_overhead", "compile_aot_eager", "compile_cudagraphs", "cuda_graph",
         "bf16_autocast", "fused_adamw")


def dynamo_counters():
    # torch._dynamo.utils.counters: a defaultdict of Counters, e.g. counters["graph_break"][reason] and
    # counters["stats"]["unique_graphs"] (PyTorch 2.x; the names Dynamo's own tests assert on).
    try:
        from torch._dynamo.utils import counters
    except Exception:  # torch < 2.0: no Dynamo
        return None
    breaks = counters.get("graph_break", {})
    stats = counters.get("stats", {})
    return {"graph_breaks": int(sum(breaks.values())),
            "break_reasons": {str(k)[:200]: int(v) for k, v in breaks.items()},
            "unique_graphs": int(stats.get("unique_graphs", 0)),
            "calls_captured": int(stats.get("calls_captured", 0))}


def model_and_data(torch, device, seed):
    torch.manual_seed(seed)
    width, batch = 1024, 256
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.LayerNorm(width),
                                torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, 16)).to(device)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    xs = torch.randn(8, batch, width, generator=g).to(device)
    ys = torch.randint(0, 16, (8, batch), generator=g).to(device)
    return model, xs, ys


def run_case(case, steps, seed):
    import torch
    if not torch.__version__.split(".")[0].isdigit() or int(torch.__version__.split(".")[0]) < 2:
        return {"unsupported": "torch %s: the PyTorch 2.x cases need torch >= 2.0" % torch.__version__}
    cuda = torch.cuda.is_available()
    if not cuda:
        return {"unsupported": "no CUDA device: the cases exercise the CUDA paths (graphs, fused AdamW, inductor)"}
    device = torch.device("cuda")
    # Same seed, deterministic kernels where PyTorch has them, so two runs can be compared loss by loss.
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    model, xs, ys = model_and_data(torch, device, seed)
    loss_fn = torch.nn.functional.cross_entropy
    fused = case == "fused_adamw"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True) if fused else torch.optim.AdamW(
        model.parameters(), lr=1e-3, foreach=True)
    losses = []

    if case == "cuda_graph":
        # The recipe of the PyTorch docs ("Whole-network capture"): warm up on a side stream, capture
        # forward + backward + optimizer step once, then replay with new data copied into static inputs.
        static_x, static_y = xs[0].clone(), ys[0].clone()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            opt.step()
        for step in range(steps):
            static_x.copy_(xs[step % len(xs)])
            static_y.copy_(ys[step % len(ys)])
            g.replay()
            losses.append(float(static_loss.item()))
        return {"losses": losses}

    fwd = model
    if case.startswith("compile_"):
        mode = {"compile_default": None, "compile_reduce_overhead": "reduce-overhead"}.get(case)
        backend = {"compile_aot_eager": "aot_eager", "compile_cudagraphs": "cudagraphs"}.get(case, "inductor")
        fwd = torch.compile(model, mode=mode, backend=backend)
    for step in range(steps):
        x, y = xs[step % len(xs)], ys[step % len(ys)]
        if case == "bf16_autocast":
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = loss_fn(fwd(x), y)
        else:
            loss = loss_fn(fwd(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return {"losses": losses}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in CASES:
        sys.stderr.write("usage: torch2_case.py {%s} RESULT.json [--steps N] [--seed S]\n" % "|".join(CASES))
        return 2
    case, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 30
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS (CUDA docs)
    rc = 0
    try:
        res = run_case(case, steps, seed)
    except Exception as e:  # recorded, not raised: the stage compares what each side did
        res = {"error": "%s: %s" % (type(e).__name__, str(e)[:2000]), "traceback": traceback.format_exc()[-4000:]}
        rc = 1
    try:
        import torch
        res["torch"] = torch.__version__
        res["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:
        pass
    res["case"] = case
    res["dynamo"] = dynamo_counters()
    with open(out, "w") as f:
        json.dump(res, f)
    print("torch2_case %s: %s" % (case, "error" if rc else ("unsupported" if "unsupported" in res else
                                                           "%d steps" % len(res.get("losses", [])))))
    return rc


if __name__ == "__main__":
    sys.exit(main())
