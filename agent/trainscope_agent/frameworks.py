"""Where a framework is configured: the user's `TrainingArguments(...)` (Hugging Face) and
`Trainer(...)` (Lightning). A framework builds the DataLoader and the optimizer in its own code,
so their construction site is the user's `trainer.train()` / `trainer.fit()` line; the knob that
changes them (`dataloader_num_workers`, `bf16`, `optim`, `torch_compile`, `precision`) is at the
configuration line, which this module records as a `config` site with the knobs' values.

The framework's module is patched right after it is imported (import_watch.py, as torch is):
nothing is imported on the user's behalf.
"""
import functools
import os
import sys

from . import sites, warn_through
from .guard import G, fail, patch
from .import_watch import watch
from .state import S

# module -> (class, method to wrap, framework, knobs read from the instance)
_WATCH = {
    "transformers.training_args": ("TrainingArguments", "__post_init__", "transformers",
                                   ("dataloader_num_workers", "dataloader_pin_memory",
                                    "dataloader_persistent_workers", "dataloader_prefetch_factor",
                                    "bf16", "fp16", "optim", "torch_compile", "gradient_accumulation_steps",
                                    "per_device_train_batch_size", "eval_steps", "save_steps", "max_steps",
                                    "num_train_epochs")),
    "lightning.pytorch.trainer.trainer": ("Trainer", "__init__", "lightning",
                                          ("precision", "accumulate_grad_batches", "val_check_interval",
                                           "max_epochs", "max_steps", "detect_anomaly")),
    "pytorch_lightning.trainer.trainer": ("Trainer", "__init__", "lightning",
                                          ("precision", "accumulate_grad_batches", "val_check_interval",
                                           "max_epochs", "max_steps", "detect_anomaly")),
}


def install():
    watch({name: functools.partial(_patch, name) for name in _WATCH})


def _patch(modname, mod):
    if G.off:
        return
    cls_name, meth, framework, knobs = _WATCH[modname]
    try:
        cls = getattr(mod, cls_name, None)
        if cls is None or getattr(cls, "_trainscope_config", False) or not hasattr(cls, meth):
            return
        orig = patch(cls, meth, None)

        def wrapper(self, *args, **kwargs):
            r = warn_through.call(orig, self, *args, **kwargs)
            if not G.off:
                try:
                    _record(self, framework, cls_name, knobs)
                except Exception as e:
                    fail("framework config site", e)
            return r

        wrapper.__wrapped__ = orig
        for a in ("__name__", "__qualname__", "__doc__"):
            try:
                setattr(wrapper, a, getattr(orig, a))
            except Exception:
                pass
        setattr(cls, meth, wrapper)
        cls._trainscope_config = True
    except Exception as e:
        fail("framework config", e)


def _record(obj, framework, cls_name, knobs):
    site = sites.where("config", 3, framework + "." + cls_name, caller=True)
    if site is None:
        return
    site = sites.add(site)
    vals = []
    for k in knobs:
        v = getattr(obj, k, None)
        if v is None:
            # Lightning keeps the precision on its connector: read it where it lives
            if k == "precision":
                v = getattr(getattr(obj, "_accelerator_connector", None), "_precision_flag", None)
            elif k == "detect_anomaly":  # Trainer(detect_anomaly=True) keeps it private
                v = getattr(obj, "_detect_anomaly", None)
        if v is not None:
            vals.append(("knob_" + k, getattr(v, "value", v)))
    S.channel.send_text("config", [("framework", framework), ("class", cls_name),
                                   ("site_file", site.file), ("site_line", site.line),
                                   ("parsed_from", _parsed_from())] + vals)


# The argument parsers that build the configuration from outside the code: HfArgumentParser (every
# Hugging Face example script: `parser.parse_args_into_dataclasses()`) and LightningCLI. Their
# fields are set on the command line (or in the file the parser reads), not at the line that calls
# the parser: the fix is a flag there. function name -> where the values come from.
_PARSERS = {
    ("transformers", "hf_argparser.py"): {"parse_args_into_dataclasses": "argv", "parse_json_file": "json",
                                          "parse_yaml_file": "yaml"},
    ("pytorch", "cli.py"): None,  # lightning/pytorch/cli.py: LightningCLI parses sys.argv (and --config files)
    ("pytorch_lightning", "cli.py"): None,
}


def _parsed_from():
    """"argv", "json" or "yaml" when an argument parser is on the stack between the user's line and
    the constructor (the agent's own frames match no parser), else ""."""
    f = sys._getframe(1)
    for _ in range(sites.MAX_WALK):
        if f is None or sites.is_user_file(f.f_code.co_filename):
            break
        path = f.f_code.co_filename
        key = (os.path.basename(os.path.dirname(path)), os.path.basename(path))
        if key in _PARSERS:
            how = _PARSERS[key]
            if how is None:
                return "argv"
            if f.f_code.co_name in how:
                return how[f.f_code.co_name]
        f = f.f_back
    return ""
