"""One configuration of the three-run lab (fp32, bf16, bf16 + torch.compile), in this fresh process.

  python -m trainscope_lab.lab_runner --target T --config fp32|bf16|bf16+compile|fp16+scaler|bf16+channels_last

Same seed, same fixed data slice (the first (warmup+steps)*batch samples, in order), the DataLoader in
the loop as the user has it, warm-up steps excluded, clip_grad_norm_(1.0) as in the seed. Prints the
per-step times (the C++ side computes medians, spread and ratios), the data-wait per step and peak memory.
"""
import argparse
import contextlib
import sys
import time

from . import common
from .target import TargetError, build, fixed_slice, loader_kwargs

CONFIGS = ("fp32", "bf16", "bf16+compile", "fp16+scaler", "bf16+channels_last")


def skip_reason(config, device):
    """Why this PyTorch / device cannot run the configuration, or None. Feature-detected, never by version."""
    import torch

    amp = config.split("+")[0]
    if "compile" in config and not hasattr(torch, "compile"):
        return "torch %s has no torch.compile (it arrived in 2.0)" % torch.__version__
    if "compile" in config and sys.version_info >= (3, 12) and not hasattr(torch, "_dynamo"):
        return "torch.compile is not available on Python %d.%d with this torch" % sys.version_info[:2]
    if amp == "bf16" and device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability()
        if major < 8:
            return "%s (sm_%d%d) has no bf16 tensor cores (needs sm_80+)" % (
                torch.cuda.get_device_name(), major, minor)
    if amp == "fp16":
        if not device.startswith("cuda"):
            return "fp16 autocast with GradScaler needs a CUDA device"
    return None


def autocast_ctx(config, device):
    import torch

    amp = config.split("+")[0]
    if amp == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype)


def make_scaler(config):
    import torch

    if not config.startswith("fp16"):
        return None
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler("cuda")  # 2.3+
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="trainscope_lab.lab_runner")
    ap.add_argument("--target", required=True)
    ap.add_argument("--config", required=True, choices=CONFIGS)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--steps", type=int, default=30, help="measured steps")
    ap.add_argument("--warmup", type=int, default=5, help="steps run first and not measured")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=0, help="override the factory's batch size")
    ap.add_argument("--clip", type=float, default=1.0, help="gradient clipping max norm (default 1.0, a common choice); 0 = off")
    a = ap.parse_args(argv)
    fields = {"config": a.config}
    try:
        import torch

        device = common.pick_device(a.device)
        fields.update(common.device_info(device))
        reason = skip_reason(a.config, device)
        if reason:
            common.emit("lab", "skipped", reason=reason, **fields)
            return 0
        common.seed_everything(a.seed)
        rss_before_factory = common.rss_bytes()
        target = build(a.target)
        if a.batch_size > 0:
            target.batch_size = a.batch_size
        channels_last = "channels_last" in a.config
        model = target.model.to(device)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        model.train()
        opt = target.optimizer(model.parameters())
        params = [p for p in model.parameters() if p.requires_grad]
        if "compile" in a.config:
            model = torch.compile(model)
        scaler = make_scaler(a.config)
        total = a.warmup + a.steps
        kw = loader_kwargs(target)
        loader = torch.utils.data.DataLoader(fixed_slice(target, total * target.batch_size), **kw)
        fields.update(batch_size=target.batch_size, warmup=a.warmup, num_workers=kw["num_workers"],
                      pin_memory=kw["pin_memory"], clip=a.clip)
        cuda = device.startswith("cuda")
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        common.trim_heap()
        rss_before_loop = common.rss_bytes()
        common.reset_peak_rss()
        step_end_cpu, events, waits, losses = [], [], [], []
        t_start = time.perf_counter()
        t0 = None
        warmup_ms = 0.0
        samples = 0
        it = iter(loader)
        for step in range(total):
            tw = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break  # an IterableDataset shorter than the slice
            waits.append((time.perf_counter() - tw) * 1000.0)
            if step == 0 and channels_last:
                x = target.first_input(batch)
                if not (isinstance(x, torch.Tensor) and x.dim() == 4):
                    common.emit("lab", "skipped", reason="channels_last needs 4-D image inputs", **fields)
                    return 0
            batch = common.to_device(batch, device, channels_last)
            with autocast_ctx(a.config, device):
                loss = target.loss(model, batch)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                if a.clip > 0:
                    torch.nn.utils.clip_grad_norm_(params, a.clip)
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                if a.clip > 0:
                    torch.nn.utils.clip_grad_norm_(params, a.clip)
                opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.detach().float())
            if cuda:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                events.append(ev)
            step_end_cpu.append(time.perf_counter())
            if step == a.warmup - 1:
                common.sync(device)
                t0 = time.perf_counter()
                warmup_ms = (t0 - t_start) * 1000.0
            elif step >= a.warmup:
                samples += common.batch_size_of(batch)
            common.progress(step + 1, total, a.config)
        common.sync(device)
        t_end = time.perf_counter()
        done = len(step_end_cpu)
        if done <= a.warmup:
            raise TargetError("the data gave only %d batches; need more than the %d warm-up steps" % (done, a.warmup))
        if a.warmup == 0:
            t0 = t_start
        if cuda:
            step_ms = [events[i - 1].elapsed_time(events[i]) for i in range(max(a.warmup, 1), done)]
            peak = torch.cuda.max_memory_allocated()
            mem_kind = "cuda_max_allocated"
        else:
            ends = [t_start] + step_end_cpu
            step_ms = [(ends[i + 1] - ends[i]) * 1000.0 for i in range(a.warmup, done)]
            # Training memory on the CPU: what the loop added on top of what existed before it, plus
            # the model's own parameters (created before the loop, as on a GPU they would be resident).
            peak = max(0, common.peak_rss_bytes() - rss_before_loop) + common.param_bytes(target.model)
            mem_kind = "rss_delta_plus_params"
        lt = torch.stack(losses)
        fields.update(
            steps=done - a.warmup,
            samples=samples,
            elapsed_s=t_end - t0,
            samples_per_s=samples / (t_end - t0) if t_end > t0 else 0.0,
            step_ms=step_ms,
            data_wait_ms=waits[a.warmup:done],
            warmup_ms=warmup_ms,
            peak_mem_bytes=peak,
            mem_kind=mem_kind,
            rss_before_factory=rss_before_factory,
            nonfinite_losses=int((~torch.isfinite(lt)).sum()),
            final_loss=float(lt[-1]),
        )
        common.emit("lab", "ok", **fields)
        return 0
    except Exception as e:  # the user's code failed: one readable line, status error
        common.fail("lab", e, **fields)
        return 3


if __name__ == "__main__":
    sys.exit(main())
