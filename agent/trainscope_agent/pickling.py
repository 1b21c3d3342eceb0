"""The agent's hooks never travel with the user's model.

hooks_model puts two forward hooks on the model, and PyTorch keeps them in the module's __dict__
(`_forward_pre_hooks`, `_forward_hooks`): `torch.save(model)`, `pickle.dump` and `copy.deepcopy`
would carry them. The file would then name trainscope_agent: it fails to load wherever the agent
is not installed, and torch.load's weights_only unpickler (the default since PyTorch 2.6) refuses
it even in this run. pytorch/examples' word_language_model saves its whole model each epoch and
reloads the best one under `torch.serialization.safe_globals([its classes])`; under trainscope it
failed with "Unsupported global: GLOBAL trainscope_agent.hooks_model._fwd_post".

So the model's class gets a reducer in `copyreg.dispatch_table`, which pickle (torch.save's
pickler included) and copy.deepcopy consult before the object's own `__reduce_ex__`: it returns
that same reduction with our hooks left out of the state, so the bytes are those of a model we
never touched. The live module is not changed (Dynamo guards its hook dicts), nothing runs until
something is pickled, and a class that has a reducer there already is left alone.
"""
import copyreg

HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")  # where a module keeps its forward hooks
# Dicts keyed by the same handle ids (the hook's flags): the ids dropped are dropped there too.
_ID_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")


def keep_out(cls, hooks):
    """Pickles and deep copies of `cls` instances leave out the hook functions in `hooks`."""
    if cls in copyreg.dispatch_table:
        return
    ours = tuple(hooks)

    def reduce(obj):
        rv = obj.__reduce_ex__(2)  # what pickle and deepcopy would have used (torch.save: protocol 2)
        try:
            return _without(rv, ours)
        except Exception:
            return rv  # never break the user's save: at worst the hooks travel, as without us

    copyreg.dispatch_table[cls] = reduce


def ours_in(state, ours):
    """[(hook dict, handle id)] of the hooks in `ours` among a module's state (its __dict__ or a
    copy of it): what pickles leave out here and scripting.py takes out while TorchScript runs."""
    found = []
    for name in HOOK_DICTS:
        d = state.get(name)
        if d:
            found.extend((d, k) for k, v in d.items() if any(v is h for h in ours))
    return found


def _without(rv, ours):
    if not isinstance(rv, tuple) or len(rv) < 3 or not isinstance(rv[2], dict):
        return rv
    drop = {k for _, k in ours_in(rv[2], ours)}
    if not drop:
        return rv
    state = dict(rv[2])  # the state may be the live __dict__ itself (Python 3.11's object.__getstate__)
    for name in HOOK_DICTS + _ID_DICTS:
        d = state.get(name)
        if d and any(k in drop for k in d):
            state[name] = type(d)((k, v) for k, v in d.items() if k not in drop)
    return rv[:2] + (state,) + rv[3:]
