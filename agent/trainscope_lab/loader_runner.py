"""One point of the DataLoader sweep (one DataLoader setting timed over a number of batches, in a fresh process).

  python -m trainscope_lab.loader_runner --target T --num-workers N [--pin-memory 1] [--prefetch-factor K]
                                         [--persistent 1] [--batches 40] [--epochs 2] [--probe]

Iterates the same fixed slice of the dataset for --epochs epochs with nothing else in the loop, so
the rate measured is what the loader alone can deliver. Per epoch: time to the first batch (epoch 1:
worker start; later epochs: the respawn persistent_workers avoids); in between, the arrival interval
of every batch after the first few (the steady rate). --probe also times __getitem__ per sample and
collate per batch in this process.
"""
import argparse
import statistics
import sys
import time

from . import common
from .target import build, fixed_slice, loader_kwargs


def probe_costs(target, reps):
    """Median __getitem__ time per sample and collate time per batch, in the main process."""
    import torch

    ds = target.dataset
    if not target.is_map_style():
        return None, None, 0
    n = len(ds)
    bs = target.batch_size
    collate = target.collate_fn or getattr(torch.utils.data, "default_collate", None)
    if collate is None:
        from torch.utils.data._utils.collate import default_collate as collate
    per_sample, per_batch, nbytes = [], [], 0
    for r in range(reps):
        samples = []
        for j in range(bs):
            t = time.perf_counter()
            samples.append(ds[(r * bs + j) % n])
            per_sample.append((time.perf_counter() - t) * 1000.0)
        t = time.perf_counter()
        batch = collate(samples)
        per_batch.append((time.perf_counter() - t) * 1000.0)
        nbytes = common.tensor_bytes(batch)
    return statistics.median(per_sample), statistics.median(per_batch), nbytes


def main(argv=None):
    ap = argparse.ArgumentParser(prog="trainscope_lab.loader_runner")
    ap.add_argument("--target", required=True)
    ap.add_argument("--num-workers", type=int, required=True)
    ap.add_argument("--pin-memory", type=int, default=0)
    ap.add_argument("--prefetch-factor", type=int, default=0, help="0: PyTorch's default")
    ap.add_argument("--persistent", type=int, default=0)
    ap.add_argument("--batches", type=int, default=40, help="batches per epoch")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--probe-reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    fields = {"num_workers": a.num_workers, "pin_memory": bool(a.pin_memory),
              "prefetch_factor": a.prefetch_factor if a.num_workers > 0 else -1,
              "persistent_workers": bool(a.persistent) and a.num_workers > 0}
    try:
        import torch

        fields["cuda_available"] = torch.cuda.is_available()
        fields["torch_version"] = torch.__version__
        if a.pin_memory and not torch.cuda.is_available():
            common.emit("loader", "skipped", reason="pin_memory needs CUDA", **fields)
            return 0
        common.seed_everything(a.seed)
        target = build(a.target)
        bs = target.batch_size
        fields["batch_size"] = bs
        if target.is_map_style():
            fields["dataset_batches"] = len(target.dataset) // bs
        if a.probe:
            g, c, nbytes = probe_costs(target, a.probe_reps)
            fields.update(getitem_ms=g if g is not None else -1, collate_ms=c if c is not None else -1,
                          batch_bytes=nbytes)
        kw = loader_kwargs(target, num_workers=a.num_workers, pin_memory=bool(a.pin_memory),
                           prefetch_factor=a.prefetch_factor or None, persistent_workers=bool(a.persistent))
        if a.num_workers > 0:
            fields["prefetch_factor"] = kw.get("prefetch_factor") or 2  # PyTorch's default when not given
        warm = max(2, a.num_workers)  # the first batches arrive together: workers started at once
        per_epoch = a.batches + warm
        loader = torch.utils.data.DataLoader(fixed_slice(target, per_epoch * bs), **kw)
        first_ms, intervals = [], []
        total = a.epochs * per_epoch
        done = 0
        for epoch in range(a.epochs):
            t_iter = time.perf_counter()
            last = None
            for k, batch in enumerate(loader):
                now = time.perf_counter()
                if k == 0:
                    first_ms.append((now - t_iter) * 1000.0)
                elif k >= warm:
                    intervals.append((now - last) * 1000.0)
                last = now
                done += 1
                if done % 5 == 0 or done == total:
                    common.progress(done, total, "workers=%d" % a.num_workers)
                if "batch_bytes" not in fields:
                    fields["batch_bytes"] = common.tensor_bytes(batch)
            del last
        if not intervals:
            raise RuntimeError("the loader delivered too few batches to time")
        mean_ms = sum(intervals) / len(intervals)
        fields.update(batch_ms=intervals, batches_per_s=1000.0 / mean_ms if mean_ms > 0 else 0.0,
                      first_batch_ms=first_ms[0], restart_ms=first_ms[1] if len(first_ms) > 1 else -1)
        common.emit("loader", "ok", **fields)
        return 0
    except Exception as e:
        common.fail("loader", e, **fields)
        return 3


if __name__ == "__main__":
    sys.exit(main())
