"""What libraries do to models, as data: one table that every analysis reads
(issue 36.1), instead of knowledge spread over the rules.

A row says, for one class or function of torch or another library (or, for a
method any receiver may have, its name):

- ``kind``: what a call gives back.
  ``module``: an ``nn.Module`` built from that class;
  ``factory``: a model built and returned (``torchvision.models.resnet18()``,
  ``timm.create_model``); ``loader``: whatever was saved, a model only when
  the code uses it as one (``torch.load`` returns a ``state_dict`` as often as
  a pickled module); ``wrapper``: a module that runs its first argument's
  modules and whose ``train()``/``eval()`` reach them (``Module.train``
  recurses); ``passthrough``: the arguments handed back as they were, wrapped
  for the device at most, in their mode (accelerate's ``prepare``);
  ``unwrapper``: the module inside a wrapper (``unwrap_model``), the same
  object the flow tracks; ``runner``: a function that runs its first
  argument's forward (``nn.parallel.data_parallel(netG, inputs, gpus)`` runs
  ``netG``), giving back its outputs, no module.
- ``returns``: the mode of the model it gives back. ``train`` (a freshly
  built module: ``nn.Module.__init__`` sets ``training = True``), ``eval``
  (the library calls ``eval()`` itself: transformers' ``from_pretrained``;
  diffusers' does too, but its ``from_pretrained`` also loads pipelines and
  schedulers, which are no modules, so it has no row yet), ``as_saved`` (a pickled module keeps its
  ``training`` flag), ``as_given`` (a pass-through), ``unknown``.
- ``mode_layers``: instances hold Dropout/BatchNorm (``eval()`` changes what
  they compute): True, False, or None when it depends on the model.
- ``needs_use``: the result is a model only when the code also calls it, a
  mode call or ``.parameters()`` is made on it (loaders and hubs, which may
  return anything).
- ``passes``: for a pass-through, which arguments come back: ``each`` (every
  positional argument, in order: ``prepare(model, opt, loader)``) or
  ``first``.
- ``holds_as``: the attribute a wrapper keeps its module in
  (``DataParallel(m).module``).
- ``receiver_hint``: a method-name row matches only on a receiver whose last
  name contains it (``fabric.setup``: ``setup`` alone is too common a name).
- ``forward_methods``: methods of an instance that run its forward
  (transformers' ``generate``), for library classes only: an in-repo class's
  are computed from its code (``forwards.forward_methods``);
  ``no_grad_methods`` those the library runs under ``torch.no_grad()``
  itself (their grad needs nothing from the caller, their mode does).

Facts, with where they come from, not guesses: a row is added only when the
library's source shows it (the ``why`` column).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["module", "factory", "loader", "wrapper", "passthrough", "unwrapper", "runner"]
Returns = Literal["train", "eval", "as_saved", "as_given", "unknown"]
Match = Literal["exact", "prefix", "method"]


@dataclass(frozen=True)
class Row:
    name: str  # a qualified name, a prefix ending with ".", or a method name
    match: Match
    kind: Kind
    returns: Returns
    why: str
    mode_layers: bool | None = None
    needs_use: bool = False
    passes: Literal["each", "first"] | None = None
    holds_as: str | None = None
    receiver_hint: str | None = None
    library: str | None = None  # a method row: the receiver is a class imported from it
    forward_methods: frozenset[str] = frozenset()
    # Of those, the ones the library runs under ``torch.no_grad()`` itself.
    no_grad_methods: frozenset[str] = frozenset()


_DATA_PARALLEL_NAMES = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
)

# torch.nn layers whose forward depends on the mode.
_MODE_LAYER_NAMES = (
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
    "LazyBatchNorm2d", "LazyBatchNorm3d",
)  # fmt: skip

_FROM_PRETRAINED_EVAL = "PreTrainedModel/ModelMixin.from_pretrained ends with model.eval()"

TABLE: tuple[Row, ...] = (
    *(
        Row(f"torch.nn.{n}", "exact", "module", "train", "a mode-dependent layer", True)
        for n in _MODE_LAYER_NAMES
    ),
    *(
        Row(n, "exact", "wrapper", "as_given", "train() calls module.train()", holds_as="module")
        for n in _DATA_PARALLEL_NAMES
    ),
    Row(
        "torch.compile",
        "exact",
        "wrapper",
        "as_given",
        "OptimizedModule shares the module's submodules (_orig_mod)",
        holds_as="_orig_mod",
    ),
    Row("torchvision.models.", "prefix", "factory", "train", "builders construct the model"),
    *(
        Row(
            n,
            "exact",
            "module",
            "train",
            "pytorch-fid's InceptionV3: an nn.Module of torchvision Inception blocks (BatchNorm2d "
            "in every BasicConv2d), no train()/eval() override; its own get_activations calls "
            "model.eval() first",
            True,
        )
        for n in ("pytorch_fid.inception.InceptionV3",)
    ),
    *(
        Row(
            n,
            "exact",
            "runner",
            "as_given",
            "data_parallel(module, inputs, device_ids) replicates module and applies it to the "
            "scattered inputs (parallel_apply): module's forward, in its mode",
        )
        for n in (
            "torch.nn.parallel.data_parallel",
            "torch.nn.parallel.data_parallel.data_parallel",
        )
    ),
    Row("timm.create_model", "exact", "factory", "train", "constructs the model class"),
    Row(
        "torch.hub.load",
        "exact",
        "factory",
        "unknown",
        "returns what the hubconf entry point returns",
        needs_use=True,
    ),
    Row(
        "torch.load",
        "exact",
        "loader",
        "as_saved",
        "unpickles the object: a state_dict as often as a module",
        needs_use=True,
    ),
    Row(
        "torch.jit.load",
        "exact",
        "loader",
        "as_saved",
        "a ScriptModule keeps the training flag it was saved with",
    ),
    Row(
        "from_pretrained",
        "method",
        "factory",
        "eval",
        "PreTrainedModel.from_pretrained ends with model.eval()",
        needs_use=True,  # the name says nothing of the class: a model once used as one
        library="transformers.",
        forward_methods=frozenset({"generate"}),
        no_grad_methods=frozenset({"generate"}),  # GenerationMixin.generate: @torch.no_grad()
    ),
    Row(
        "from_pretrained",
        "method",
        "factory",
        "unknown",
        "another library's (or a project's own) loader: any mode",
        needs_use=True,
    ),
    Row(
        "prepare",
        "method",
        "passthrough",
        "as_given",
        "Accelerator.prepare returns its arguments in order, wrapped for the device",
        passes="each",
    ),
    Row(
        "setup",
        "method",
        "passthrough",
        "as_given",
        "Fabric.setup(module, *optimizers) returns them, the module wrapped",
        passes="each",
        receiver_hint="fabric",
    ),
    Row(
        "setup_module",
        "method",
        "passthrough",
        "as_given",
        "Fabric.setup_module returns the module wrapped",
        passes="first",
        receiver_hint="fabric",
    ),
    Row(
        "get_peft_model",
        "method",
        "passthrough",
        "as_given",
        "PeftModel's forward runs the base model's modules in their mode",
        passes="first",
    ),
    Row("unwrap_model", "method", "unwrapper", "as_given", "the module inside the wrapper"),
    Row(
        "_unwrap_model",
        "method",
        "unwrapper",
        "as_given",
        "the Hugging Face examples' local helper around unwrap_model",
    ),
)


def row(qualname: str | None) -> Row | None:
    """The row of a qualified class or function name (exact rows first)."""
    if not qualname:
        return None
    found = _EXACT.get(qualname)
    if found is not None:
        return found
    for r in _PREFIXES:
        if qualname.startswith(r.name):
            return r
    return None


def method_row(
    method: str, receiver: str | None = None, receiver_qualname: str | None = None
) -> Row | None:
    """The row of ``<receiver>.<method>(...)`` / ``<method>(...)`` read by
    name, any receiver (the accelerator is an instance, not an import);
    ``receiver_qualname``: what the receiver names when it is an import
    (``AutoModel`` -> ``transformers.AutoModel``), for rows of one library."""
    named = (receiver_qualname or receiver or "").rsplit(".", 1)[-1]
    for found in _METHODS.get(method, ()):
        if found.receiver_hint is not None:
            if found.receiver_hint not in (receiver or "").rsplit(".", 1)[-1].lower():
                continue
        if found.kind in ("factory", "loader") and named.endswith(NOT_MODEL_SUFFIXES):
            return None  # ``AutoTokenizer.from_pretrained``: no model, whatever the library
        if found.library is not None:
            q = receiver_qualname or ""
            # A model class of that library.
            if not q.startswith(found.library) or not named[:1].isupper():
                continue
        return found
    return None


# Classes a library's ``from_pretrained`` loads that are no models (a
# tokenizer or a diffusers pipeline is called like one, but has no
# ``train()``/``eval()``).
NOT_MODEL_SUFFIXES = (
    "Tokenizer",
    "TokenizerFast",
    "Config",
    "Processor",
    "FeatureExtractor",
    "ImageProcessor",
    "Pipeline",
    "Scheduler",
)


def names(kind: Kind) -> frozenset[str]:
    """The names of one kind of row (``wrapper``: qualified names;
    ``passthrough``/``unwrapper``: method names)."""
    return frozenset(r.name for r in TABLE if r.kind == kind)


def mode_layer(qualname: str | None) -> bool:
    """A layer (a torch.nn one, or a library module the table knows) whose
    forward depends on the mode."""
    r = row(qualname)
    return r is not None and r.kind == "module" and r.mode_layers is True


_EXACT = {r.name: r for r in TABLE if r.match == "exact"}
_PREFIXES = tuple(r for r in TABLE if r.match == "prefix")
_METHODS: dict[str, tuple[Row, ...]] = {}
for _r in TABLE:
    if _r.match == "method":
        _METHODS[_r.name] = (*_METHODS.get(_r.name, ()), _r)

DATA_PARALLEL = frozenset(r.name for r in TABLE if r.kind == "wrapper" and r.holds_as == "module")
WRAPPERS = names("wrapper")
# Functions that run their first argument's forward, and their last names
# (for syntactic pre-conditions that see no imports).
RUNNERS = names("runner")
RUNNER_NAMES = frozenset(n.rsplit(".", 1)[-1] for n in RUNNERS)
# The attributes wrappers hold their module in: ``W.module(x)`` runs it.
HELD_AS = frozenset(r.holds_as for r in TABLE if r.holds_as is not None)
# Library forward methods that run under ``torch.no_grad()`` themselves.
NO_GRAD_METHODS = frozenset(m for r in TABLE for m in r.no_grad_methods)
FACTORY_PREFIXES = tuple(r.name for r in _PREFIXES if r.kind == "factory")
# Model zoos: a class or builder of these packages builds a module, but
# which one (its layers, its overrides) is not ours to say.
ZOOS = ("torchvision.models.", "timm.", "transformers.")


# torchvision's model builders (``torchvision.models.resnet18``,
# ``torchvision.models.detection.fasterrcnn_resnet50_fpn``, ``get_model``):
# each returns an ``nn.Module`` of a torchvision class, none of which
# overrides ``train`` or ``eval`` (checked in 0.29.1: only feature_extraction's
# traced graph defines one, with ``mode``). Not the weights
# enums and helpers beside them, nor ``feature_extraction`` (a traced graph).
_TORCHVISION_NOT_BUILDERS = frozenset(
    {
        "get_weight",
        "get_model_weights",
        "list_models",
        "get_model_builder",
        "load_state_dict_from_url",
    }
)


def torchvision_builder(qualname: str) -> bool:
    if not qualname.startswith("torchvision.models."):
        return False
    parts = qualname.split(".")[2:]
    if not parts or "feature_extraction" in parts or "_utils" in parts:
        return False
    if any(p[:1].isupper() or p.startswith("_") for p in parts):
        return False  # a class, a weights enum or a private helper
    return parts[-1] not in _TORCHVISION_NOT_BUILDERS


def torchvision_mode_layers(qualname: str, keywords: frozenset[str] = frozenset()) -> bool:
    """Whether the model a torchvision builder makes holds a layer whose
    forward depends on the mode: every one holds BatchNorm, dropout or
    stochastic depth, or computes differently when training (detection),
    but the vision transformers, whose dropouts default to 0.0 (unless the
    call passes ``dropout``/``attention_dropout``)."""
    if not qualname.rsplit(".", 1)[-1].startswith("vit_"):
        return True
    return bool(keywords & {"dropout", "attention_dropout"})
