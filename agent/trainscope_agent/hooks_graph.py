"""Steps under a whole-network CUDA graph.

PyTorch's CUDA graphs docs ("Whole-network capture") capture forward, backward and
optimizer.step() once inside `torch.cuda.graph(g)`, then run every iteration as `g.replay()`:
after the capture no optimizer step, backward or forward runs in Python again, so the usual
markers fall silent (on an H100 the agent saw 4 steps of a 40-step replay loop: the 3 warm-up
steps and the capture itself).

So `torch.cuda.CUDAGraph` is watched (class level, so `torch.cuda.graph`'s own graph object and a
bare `CUDAGraph()` alike):
  capture_begin/capture_end  while a capture runs, S.graph_capture is set and the hooks record
                             nothing (kernels are recorded, nothing runs: not a step); a capture
                             that held an optimizer step marks that graph as a whole step;
  replay                     of such a graph ends a step at the optimizer's level, with a CUDA
                             event pair around it for the GPU time (the replay is the step's work).
Partial captures (torch.cuda.make_graphed_callables, torch.compile's reduce-overhead CUDA graph
trees) hold no optimizer step: their replays are not markers, the eager optimizer step still is.
Nothing here touches the capture: the wrappers call the originals first and only set flags.
"""
import weakref

from .guard import G, fail, patch
from .state import OPTIMIZER, S

_step_graphs = weakref.WeakSet()  # graphs whose capture held the primary optimizer's step


def install(torch):
    cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if cls is None or not all(hasattr(cls, m) for m in ("capture_begin", "capture_end", "replay")):
        return
    begin_orig = patch(cls, "capture_begin", None)
    end_orig = patch(cls, "capture_end", None)
    replay_orig = patch(cls, "replay", None)

    def capture_begin(self, *args, **kwargs):
        r = begin_orig(self, *args, **kwargs)
        if not G.off:
            S.graph_capture = True
            S.graph_has_opt = False
        return r

    def capture_end(self, *args, **kwargs):
        try:
            return end_orig(self, *args, **kwargs)
        finally:
            if S.graph_capture:
                S.graph_capture = False
                if S.graph_has_opt and not G.off:
                    try:
                        _step_graphs.add(self)
                    except TypeError:
                        pass
                S.graph_has_opt = False

    def replay(self, *args, **kwargs):
        if G.off or not _step_graphs or self not in _step_graphs or not S.owns(OPTIMIZER):
            return replay_orig(self, *args, **kwargs)
        if S.stop_pending:
            S.stop_at(OPTIMIZER, True)  # --steps: the last step is complete, this replay is the next
        try:
            S.touch()
            if S.gpu is not None and S.cuda_ready:
                S.gpu.forward_start()  # the replay is the whole step's GPU work
        except Exception as e:
            fail("CUDA graph replay", e)
        r = replay_orig(self, *args, **kwargs)
        if not G.off:
            try:
                S.opt_n += 1  # one update per replay (its host time is a launch: not the optimizer's)
                S.mark_end(OPTIMIZER)  # may end the program (--steps), after the replay ran
            except Exception as e:
                fail("CUDA graph replay", e)
        return r

    for w, o in ((capture_begin, begin_orig), (capture_end, end_orig), (replay, replay_orig)):
        w.__wrapped__ = o
        w.__doc__ = getattr(o, "__doc__", None)
    cls.capture_begin, cls.capture_end, cls.replay = capture_begin, capture_end, replay
