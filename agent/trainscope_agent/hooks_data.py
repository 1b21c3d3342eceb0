"""DataLoader hooks.

- `_BaseDataLoaderIter.__next__` (class level: covers single-process, multi-process and
  persistent iterators in every version): the time the training loop waits for a batch.
- `DataLoader._get_iterator` (every version, 1.13 on; `__iter__` calls it for each new
  iterator): the settings actually used, once per DataLoader. Not the iterator's `__init__`: a
  wrapper there is the frame PyTorch's own `warnings.warn(..., stacklevel=2)` in it names (the
  `pin_memory` warning without an accelerator), so the user's stderr named the agent's file.
- The first batch's tensor bytes, once (its hand-over cost from a worker grows with them).
- The dataset fetchers (`_MapDatasetFetcher.fetch`, `_IterableDatasetFetcher.fetch`): time in
  `__getitem__` and in `collate_fn`. In a worker process this is all the agent does.
"""
import weakref

from . import channel as ch
from . import load_cost, phases, sites, warn_through
from .guard import G, check_break, fail, patch
from .state import FETCH, S, now

_seen_loaders = weakref.WeakSet()
_seen_ids = set()
_loader_sites = weakref.WeakKeyDictionary()  # DataLoader -> sites.Site where the user built it


def install(torch):
    dl = torch.utils.data.dataloader
    it = dl._BaseDataLoaderIter
    _install_construction_site(dl.DataLoader)
    next_orig = patch(it, "__next__", None)
    get_iterator_orig = patch(dl.DataLoader, "_get_iterator", None)

    def __next__(self):
        if G.off or not S.owns(FETCH):
            return next_orig(self)
        if not S.first_kind:
            S.first_kind = FETCH
        elif S.stop_pending and S.mine():
            S.stop_at(FETCH)  # --steps: the last step is complete, this fetch may start another
        try:
            if S.source <= FETCH:
                # No better marker (optimizer, backward) seen: a fetch closes the step the
                # previous fetch opened (--steps may end the program here, before the fetch).
                S.mark_start(FETCH)
            elif not S.t_start:
                S.begin(now())
        except Exception as e:
            fail("dataloader", e)
        # The first fetches from an iterator's worker processes wait for them to start (spawned ones
        # import torch; a dataset may open its store on a worker's first item): one per worker, as
        # the iterator hands its first batches out round-robin. Persistent workers keep their
        # iterator from epoch to epoch: once per object.
        d = self.__dict__
        left = d.get("_ts_warm", -1)
        starts_workers = warming = False
        if left:  # a new iterator (-1), or one still handing out its workers' first batches
            if left < 0:
                left = d.get("_num_workers", 0)
                starts_workers = left > 0  # a start: counted once
            warming = left > 0  # this fetch may wait for a worker to start: its wait is the start's
            d["_ts_warm"] = left - 1 if warming else 0
        t0 = now()
        load_cost.Queued.ns = 0
        ended = True
        try:
            batch = next_orig(self)
            ended = False
        except StopIteration:
            if S.source == FETCH and S.mine():
                S.started = False  # the epoch is over: no step is open until the next fetch
            raise
        finally:
            if not G.off:
                # Loading done in the loop itself (num_workers=0) that sat in the run queue waited
                # for a core other work held, not for data (load_cost.py).
                span = now() - t0
                queued = min(span, load_cost.Queued.ns)
                waited = span - queued
                S.data_ns += waited
                S.fetches += 1
                phases.fetched(t0, waited, d.get("_dataset"), queued, starts_workers, ended, warming)
                site = d.get("_ts_site")
                if warming:
                    S.workers_started = True  # the step's wait is the workers' start (flag F_WORKERS)
                if site is not None:
                    site.count += 1  # the loader's fetches and wait, at the line that built it
                    site.ns += waited
                    if warming:
                        _count_start(site, d, waited, starts_workers)
        if not _Batch.sized and not G.off:
            _record_batch_bytes(batch)
        return batch

    def _get_iterator(self, *args, **kwargs):
        iterator = get_iterator_orig(self, *args, **kwargs)
        if G.off:
            return iterator
        try:
            check_break("loader")
            _record_loader(iterator, self)
        except Exception as e:
            fail("dataloader settings", e)
        return iterator

    _get_iterator.__wrapped__ = get_iterator_orig
    it.__next__ = __next__
    dl.DataLoader._get_iterator = _get_iterator

    fetch = torch.utils.data._utils.fetch
    for cls in (fetch._MapDatasetFetcher, fetch._IterableDatasetFetcher):
        _wrap_fetcher(cls, torch)
    _install_shard_watch(torch)  # after the fetchers took the original (state.loader_worker)


def _install_shard_watch(torch):
    """An IterableDataset hands its stream to workers only as far as its own __iter__ splits it:
    one that never asks get_worker_info() yields the whole stream in every worker, and
    num_workers=N repeats each sample N times (PyTorch docs, torch.utils.data.IterableDataset).
    The first call from code outside torch and trainscope (the user's dataset, or a library's
    such as Hugging Face datasets) is recorded once, with its line: the rule recommends workers
    for a stream only where it is split. One frame look per call until then, none after."""
    import os
    import sys
    mod = torch.utils.data
    orig = mod.get_worker_info
    skip = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep)

    def get_worker_info():
        if not _Shards.seen and not G.off:
            try:
                f = sys._getframe(1)
                if not f.f_code.co_filename.startswith(skip) and S.channel is not None:
                    _Shards.seen = True
                    S.channel.send_text("loader_shards", [("file", f.f_code.co_filename), ("line", f.f_lineno)])
            except Exception as e:
                fail("get_worker_info", e)
        return orig()

    get_worker_info.__wrapped__ = orig
    get_worker_info.__doc__ = getattr(orig, "__doc__", None)
    patch(mod, "get_worker_info", get_worker_info)


class _Shards:
    seen = False


class _Batch:
    sized = False


def _record_batch_bytes(batch):
    """The tensor bytes of the first batch the loop receives, once: a worker's hand-over of a batch
    grows with its size (diagnose/thresholds.h, kWorkerHandoverMsPerMiB). Only metadata is read
    (numel x element size), never the data, so a CUDA tensor is not synchronised."""
    _Batch.sized = True
    try:
        total, todo, seen = 0, [batch], 0
        while todo and seen < 10000:  # a bounded walk: a pathological batch costs nothing more
            x = todo.pop()
            seen += 1
            if isinstance(x, (list, tuple)):
                todo.extend(x)
            elif isinstance(x, dict):
                todo.extend(x.values())
            elif hasattr(x, "element_size") and hasattr(x, "numel"):
                total += int(x.numel()) * int(x.element_size())
        S.channel.send_text("batch", [("bytes", total), ("tensors_walked", seen)])
    except Exception as e:
        fail("batch size", e)


def _install_construction_site(DataLoader):
    """`DataLoader.__init__` notes the user's line that built the loader (a frame walk, once per
    loader): the loop's loader is then named by its line, wherever it was built (a helper module,
    a Lightning DataModule's train_dataloader, a framework's call from the user's trainer.train())."""
    init_orig = patch(DataLoader, "__init__", None)

    def __init__(self, *args, **kwargs):
        warn_through.call(init_orig, self, *args, **kwargs)
        if G.off:
            return
        try:
            if self not in _loader_sites:
                site = _site_for(self)
                if site is not None:
                    _loader_sites[self] = site
        except Exception as e:
            fail("dataloader site", e)

    __init__.__wrapped__ = init_orig
    DataLoader.__init__ = __init__


_by_dataset = {}  # id(dataset) -> site of the loader the user built over it


def _site_for(loader):
    """The user's line for this loader. A framework that rebuilds the user's loader around the
    same dataset (accelerate's prepare(), Lightning's distributed sampler injection) builds it
    in its own code; the line to change is still where the user built theirs."""
    import sys
    caller = sites.outside_agent(sys._getframe(2))
    ds = getattr(loader, "dataset", None)
    if caller is not None and sites.is_user_file(caller.f_code.co_filename):
        site = sites.where("dataloader", 3, caller=True)
        if site is not None and ds is not None:
            _by_dataset[id(ds)] = site
        return site
    if ds is not None and id(ds) in _by_dataset:
        return _by_dataset[id(ds)]
    return sites.where("dataloader", 3, caller=True)


_started = set()  # (id(site), id(dataset)) whose loader started workers at least once


def _count_start(site, d, ns, first):
    """A fetch of a pass's first batches over workers at a loader's line (first: the pass's very
    first, which counts the start). After the line's first start: the same loader again (a new
    pass without persistent_workers: `restarts`), or a new loader over a dataset that already had
    workers at this line (one built every epoch: `rebuilds`). A second loader's first start
    (train and validation built by one helper) is neither."""
    if first:
        kind = 1 if "_ts_again" in d else 0
        if not kind:
            key = (id(site), id(d.get("_dataset")))
            if key in _started:
                kind = 2
            elif len(_started) < 256:
                _started.add(key)
        d["_ts_kind"] = kind
        site.starts += 1
        if kind == 1:
            site.restarts += 1
        elif kind == 2:
            site.rebuilds += 1
    site.start_ns += ns
    kind = d.get("_ts_kind", 0)
    if kind == 1:
        site.restart_ns += ns
    elif kind == 2:
        site.rebuild_ns += ns


def _record_loader(it, loader):
    try:
        site = _loader_sites.get(loader)
    except TypeError:
        site = None
    if site is not None:
        site = sites.add(site)
        it.__dict__["_ts_site"] = site
    key = id(loader)
    try:
        seen = loader in _seen_loaders
        _seen_loaders.add(loader)
    except TypeError:
        seen = key in _seen_ids
        _seen_ids.add(key)
    if seen:
        # A loader iterated again: without persistent_workers its new iterator starts new workers.
        it.__dict__["_ts_again"] = True
        return
    ds = getattr(loader, "dataset", None)
    try:
        n = len(ds)
    except Exception:
        n = -1
    collate = getattr(loader, "collate_fn", None)
    ctx = getattr(loader, "multiprocessing_context", None)
    S.channel.send_text("loader", [
        ("dataset", type(ds).__name__ if ds is not None else ""),
        ("dataset_len", n),
        ("iterable", getattr(loader, "_dataset_kind", 0) == 1),  # _DatasetKind.Iterable (1.13 and 2.x)
        ("batch_size", _batch_size(loader)),
        ("num_workers", loader.num_workers),
        ("pin_memory", bool(loader.pin_memory)),
        ("pin_memory_effective", bool(getattr(it, "_pin_memory", loader.pin_memory))),
        ("prefetch_factor", loader.prefetch_factor if loader.prefetch_factor is not None else -1),
        ("persistent_workers", bool(loader.persistent_workers)),
        ("drop_last", bool(loader.drop_last)),
        ("collate_fn", getattr(collate, "__name__", type(collate).__name__)),
        ("sampler", type(getattr(loader, "sampler", None)).__name__),
        ("start_method", _start_method(ctx)),  # its multiprocessing_context's, else the process's
        ("iterator", type(it).__name__),
        ("site_file", site.file if site is not None else None),
        ("site_line", site.line if site is not None else None),
    ])


def _start_method(ctx):
    """How the loader's workers start: its multiprocessing_context's method, else this process's
    default ("spawn" inside torch.multiprocessing.spawn's processes), read without fixing it:
    get_start_method() without allow_none sets the default, and a set_start_method the script makes
    later would then raise. Unset, it is the platform's default, the first of get_all_start_methods()
    (Python docs, multiprocessing)."""
    try:
        if ctx is not None:
            return getattr(ctx, "_name", None)
        import multiprocessing
        return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]
    except Exception:
        return None


def _batch_size(loader):
    """The loader's batch size, or its batch sampler's: a DataLoader built with batch_sampler=
    (accelerate's BatchSamplerShard, under HF Trainer too) has batch_size None. -1 unknown."""
    b = loader.batch_size
    if b is None:
        bs = getattr(loader, "batch_sampler", None)
        b = getattr(bs, "batch_size", None)
        if b is None:
            b = getattr(getattr(bs, "batch_sampler", None), "batch_size", None)
    return b if isinstance(b, int) else -1


def _wrap_fetcher(cls, torch):
    fetch_orig = patch(cls, "fetch", None)
    worker_info = torch.utils.data.get_worker_info

    def fetch(self, possibly_batched_index):
        if G.off:
            return fetch_orig(self, possibly_batched_index)
        info = worker_info()  # once a fetch: also read below
        if info is not None and S.tid != 0:
            S.loader_worker()  # before the samples: their transforms may be modules
        try:
            cf = self.collate_fn
            if not getattr(cf, "_trainscope", False):
                self.collate_fn = _timed_collate(cf)
        except Exception as e:
            fail("fetch", e)
            return fetch_orig(self, possibly_batched_index)
        measure = load_cost.due()
        t0 = now()
        if measure:
            c0, d0 = load_cost.sample()
            ta = now()
        _Collate.ns = 0
        out = fetch_orig(self, possibly_batched_index)
        if G.off:
            return out
        try:
            t1 = now()
            total = t1 - t0
            if measure:
                c1, d1 = load_cost.sample(True)
                load_cost.add(total, c1 - c0, d1 - d0)
                load_cost.measured(total, ta - t0 + now() - t1)
            if measure and info is None:
                load_cost.Queued.ns += d1 - d0  # the loop's own loading: taken out of its data wait
            coll = _Collate.ns
            try:
                n = len(possibly_batched_index) if self.auto_collation else 1
            except TypeError:
                n = 1
            if info is None:
                S.samples += n
                S.getitem_ns += total - coll
                S.collate_ns += coll
            else:
                S.channel.send(ch.T_FETCH, ch.FETCH.pack(info.id, 0, n, total - coll, coll))
        except Exception as e:
            fail("fetch", e)
        return out

    setattr(cls, "fetch", fetch)


class _Collate:
    ns = 0


def _timed_collate(cf):
    def collate(batch):
        t0 = now()
        try:
            return cf(batch)
        finally:
            _Collate.ns += now() - t0
    collate._trainscope = True
    collate.__name__ = getattr(cf, "__name__", "collate")
    collate.__wrapped__ = cf
    return collate
