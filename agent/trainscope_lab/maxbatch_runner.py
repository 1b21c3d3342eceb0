"""The largest batch for which one full training step (forward, backward, clip, optimizer) fits.

  python -m trainscope_lab.maxbatch_runner --target T [--device auto] [--memory-limit BYTES] [--start 2]

Doubling from --start until a step does not fit, then binary search between the last fit and the
first miss, in this one process: that the process survives every miss is the point.
- CUDA: a miss is a real torch.cuda.OutOfMemoryError (--memory-limit, when given, caps this process
  with set_per_process_memory_fraction so the OOMs are real there too). After each miss the step's
  tensors are dropped, gradients set to None and the cache emptied; at the end the runner checks
  that allocated memory is back where it started (no leak) and that the context still runs a kernel.
- CPU: nothing OOMs before the machine does, so a miss is a step whose measured memory exceeds
  --memory-limit. Measured: parameters + optimizer state (tensor bytes) + the RSS peak the step adds
  (heap trimmed and VmHWM reset before each trial).
Prints every trial (batch, fits, peak bytes); the C++ side fits memory per sample and recommends a batch.
"""
import argparse
import gc
import sys
import time

from . import common
from .lab_runner import autocast_ctx
from .target import build


def base_batch(target, want):
    """Up to `want` real samples, collated once; bigger batches are built by cycling through them."""
    import torch

    ds = target.dataset
    if target.is_map_style():
        collate = target.collate_fn or getattr(torch.utils.data, "default_collate", None)
        if collate is None:
            from torch.utils.data._utils.collate import default_collate as collate
        n = min(want, len(ds))
        return collate([ds[i] for i in range(n)])
    loader = target.loader or torch.utils.data.DataLoader(ds, batch_size=target.batch_size)
    return next(iter(loader))


def grow(batch, size):
    """A batch of `size` samples, cycling the base batch's samples (new tensors, as a loader gives)."""
    import torch

    if isinstance(batch, torch.Tensor):
        if batch.dim() == 0:
            return batch.clone()
        idx = torch.arange(size) % batch.shape[0]
        return batch.index_select(0, idx.to(batch.device))
    if isinstance(batch, (list, tuple)):
        return type(batch)(grow(b, size) for b in batch)
    if isinstance(batch, dict):
        return {k: grow(v, size) for k, v in batch.items()}
    return batch


class Trainer:
    def __init__(self, target, device, config, clip):
        self.target, self.device, self.config, self.clip = target, device, config, clip
        self.model = target.model.to(device).train()
        self.opt = target.optimizer(self.model.parameters())
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.base = base_batch(target, 64)
        self.cuda = device.startswith("cuda")

    def step(self, size):
        import torch

        batch = common.to_device(grow(self.base, size), self.device)
        with autocast_ctx(self.config, self.device):
            loss = self.target.loss(self.model, batch)
        loss.backward()
        if self.clip > 0:
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        common.sync(self.device)

    def clean(self):
        import torch

        self.opt.zero_grad(set_to_none=True)
        gc.collect()
        if self.cuda:
            torch.cuda.empty_cache()
        else:
            common.trim_heap()

    def trial(self, size, limit):
        """(fits, peak_bytes, why): one step at `size`, measured; never raises on a miss."""
        import torch

        self.clean()
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
        else:
            base_rss = common.rss_bytes()
            common.reset_peak_rss()
        oom = None
        try:
            self.step(size)
        except Exception as e:  # only out-of-memory is a miss; anything else is the user's bug
            if not common.is_oom(e):
                raise
            oom = str(e).splitlines()[0][:200]
            del e
        self.clean()  # outside the except block: the traceback (and the step's tensors) are gone
        if self.cuda:
            peak = torch.cuda.max_memory_allocated()
            if oom is not None:
                return False, peak, "out of memory: " + oom
        else:
            peak = (max(0, common.peak_rss_bytes() - base_rss) + common.param_bytes(self.model)
                    + common.optimizer_state_bytes(self.opt))
        if limit > 0 and peak > limit:
            return False, peak, "over the memory limit"
        return True, peak, ""


def main(argv=None):
    ap = argparse.ArgumentParser(prog="trainscope_lab.maxbatch_runner")
    ap.add_argument("--target", required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--memory-limit", type=int, default=0, help="bytes; required on the CPU")
    ap.add_argument("--start", type=int, default=2)
    ap.add_argument("--cap", type=int, default=1 << 16)
    ap.add_argument("--config", default="fp32", choices=("fp32", "bf16", "fp16"))
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    fields = {"config": a.config, "memory_limit": a.memory_limit}
    try:
        import torch

        device = common.pick_device(a.device)
        fields.update(common.device_info(device))
        cuda = device.startswith("cuda")
        if not cuda and a.memory_limit <= 0:
            raise common.UsageError("on the CPU a --memory-limit is required (nothing runs out of memory before the machine)")
        common.seed_everything(a.seed)
        tr = Trainer(build(a.target), device, a.config, a.clip)
        capacity = a.memory_limit
        if cuda:
            idx = torch.device(device).index or 0  # 1.13 wants an explicit index here
            total = torch.cuda.get_device_properties(idx).total_memory
            if a.memory_limit > 0:
                torch.cuda.set_per_process_memory_fraction(min(1.0, a.memory_limit / total), idx)
            else:
                capacity = total
        fields["capacity_bytes"] = capacity
        fields["param_bytes"] = common.param_bytes(tr.model)
        # One step first: the optimizer creates its state lazily, and it belongs to every trial.
        warm_fits, _, why = tr.trial(min(a.start, 2), 0)
        if not warm_fits:
            raise RuntimeError("a step at batch %d does not fit: %s" % (min(a.start, 2), why))
        tr.clean()
        alloc_before = torch.cuda.memory_allocated() if cuda else common.rss_bytes()
        fields["optimizer_state_bytes"] = common.optimizer_state_bytes(tr.opt)
        trials = []
        t0 = time.perf_counter()

        def run(size):
            fits, peak, why = tr.trial(size, a.memory_limit)
            trials.append({"batch": size, "fits": fits, "peak_bytes": peak, "why": why})
            common.progress(len(trials), 0, "batch=%d %s" % (size, "fits" if fits else "miss"))
            return fits

        lo, hi = 0, None
        size = max(1, a.start)
        while size <= a.cap:
            if run(size):
                lo, size = size, size * 2
            else:
                hi = size
                break
        if hi is not None:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if run(mid):
                    lo = mid
                else:
                    hi = mid
        tr.clean()
        alloc_after = torch.cuda.memory_allocated() if cuda else common.rss_bytes()
        context_ok = True
        if cuda:  # a poisoned context fails here, not in the user's next run
            try:
                x = torch.ones(256, 256, device=device)
                context_ok = bool((x @ x).sum().item() == 256.0 * 256 * 256)
            except Exception:
                context_ok = False
        fields.update(max_batch=lo, first_miss=hi if hi is not None else -1, cap_reached=hi is None,
                      trials=trials, search_s=time.perf_counter() - t0,
                      leak_bytes=alloc_after - alloc_before, leak_kind="cuda_allocated" if cuda else "rss",
                      context_ok=context_ok)
        common.emit("max-batch", "ok", **fields)
        return 0
    except Exception as e:
        common.fail("max-batch", e, **fields)
        return 3


if __name__ == "__main__":
    sys.exit(main())
