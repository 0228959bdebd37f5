"""What the project index knows of a file of the run: the summaries of its
functions and classes (``FunctionSummary``, ``ClassSummary``, ``ModuleSummary``,
``ReturnSummary``), a call into one of them (``ExternalCall``), and the tokens
whose presence in a file's text decides whether it is summarised at all.

Plain data: the analyses below the index (the mode flow, model objects) read
these types without importing the index that computes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.project.bindings import Binding
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.records import Summary
    from rnnfix.analysis.torch.returns import Returns
    from rnnfix.analysis.torch.rnns import RnnSpec


# Tokens whose presence in a file's text decides what is summarised
# (``rnnfix.analysis.project.summarise``) and what a lookup may find there
# (``ProjectIndex.may_hold``).
# ``autograd.grad`` and captum's ``.attribute(``: gradient code without a
# ``.backward(`` (``Summary.entry_grads``).
# ``.optimizer_step(``: a training strategy's step (``ModeFlow.step_kind``).
MODE_TOKENS = (
    ".eval(",
    ".train(",
    ".backward(",
    ".step(",
    ".optimizer_step(",
    "autograd.grad",
    ".attribute(",
)
# A class that overrides ``train``/``eval`` matters to every mode call on it.
OVERRIDE_TOKENS = ("def train(", "def eval(")
RNN_TOKENS = ("LSTM", "GRU", "RNN")
# A file that may return a loaded model (``rnnfix.analysis.modes.loads``).
LOAD_TOKENS = ("load_state_dict", ".load(", "load_from_checkpoint")
HANDLER_TOKENS = ("no_grad", "inference_mode", "set_grad_enabled", "contextmanager", "__enter__")


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    params: tuple[str, ...]  # positional parameters, ``self`` included
    kwonly: tuple[str, ...]
    is_method: bool
    summary: Summary

    @property
    def sets_eval(self) -> bool:
        """It may leave a parameter, ``self`` or an attribute of ``self`` in
        eval mode: ``model.sample_sentence()`` whose body calls ``self.eval()``
        is an eval the caller's text does not show. An override of
        ``eval``/``train`` itself does not count: a caller's ``m.eval()`` is a
        mode call it already sees."""
        if self.is_method and self.name in ("eval", "train"):
            return False
        return any(Mode.EVAL in e.sets for e in self.summary.effects.values())

    @property
    def trains(self) -> bool:
        """It runs a training step on models it is given, in their mode."""
        return self.summary.optimizer_step and bool(self.summary.entry_trains)


@dataclass(frozen=True)
class ClassSummary:
    name: str
    is_module: bool  # an ``nn.Module`` subclass (as far as its own file shows)
    rnns: tuple[RnnSpec, ...]  # cuDNN RNNs an instance holds, by attribute path
    methods: dict[str, FunctionSummary] = field(default_factory=dict)  # bases of its file too
    # ``train``/``eval`` overridden so that a mode call on an instance cannot
    # go through (the class, its bases and its submodules' classes in its
    # file): method -> why (``classfacts.mode_overrides``).
    mode_overrides: dict[str, str] = field(default_factory=dict)
    holds_state: bool = True  # parameters, submodules or mode-dependent code (``classfacts``)
    is_test: bool = False  # a unittest ``TestCase`` subclass (rnnfix.analysis.project.testcode)
    # Dropout, BatchNorm or ``self.training`` in it or its file's classes it
    # builds (``classfacts.builds_mode_layers``): ``eval()`` changes its output.
    mode_layers: bool = False
    # Its forward computes the same in train and eval mode, provided the
    # classes of other files it builds or derives from (dotted names as its
    # file writes them) do too (``ClassTable.mode_free``); None: not provable.
    mode_free_needs: tuple[str, ...] | None = None
    # Methods that load trained weights into the instance (``load_weights``:
    # ``classfacts.weight_loaders``): ``model.load_weights(path)`` is a load.
    weight_loaders: frozenset[str] = frozenset()
    # Method -> ``__init__`` parameters whose stored model it takes an input
    # gradient through (``rnnfix.analysis.project.ctorgrads``), and the constructor's
    # signature to bind a construction's arguments.
    ctor_grads: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Methods that run the module's forward (``forwards.forward_methods``):
    # ``model.predict(x)`` of a caller is a forward of ``model``.
    forward_methods: frozenset[str] = frozenset()
    # Of those, the ones decorated to run with grad off (``@torch.no_grad()
    # def generate``: ``forwards.grad_off_methods``): their grad is settled.
    no_grad_methods: frozenset[str] = frozenset()
    # Attributes the class assigns a module to (``models.module_attributes``):
    # ``model.decoder(z)`` of a caller runs part of ``model``.
    submodules: frozenset[str] = frozenset()
    init_params: tuple[str, ...] = ()
    init_kwonly: tuple[str, ...] = ()
    # ``self`` attribute -> the ``__init__`` parameter it holds, assigned once
    # and nowhere else (``ctorgrads.Constructor.stored``): a method's effect on
    # ``self.model`` is an effect on what the caller passed to ``Evaluator(m)``.
    stored: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Shown:
    """A function that shows what some of its parameters compute."""

    params: tuple[str, ...]  # positional parameters
    kwonly: tuple[str, ...]
    shown: frozenset[str]  # those whose forwards reach an output


@dataclass(frozen=True)
class ModuleSummary:
    functions: dict[str, FunctionSummary]
    classes: dict[str, ClassSummary]
    imports: dict[str, Binding]
    # Module-level decorators / context managers that switch grad or the
    # module mode (``gradctx.definition_handling``): name -> {"grad", "eval"}.
    handlers: dict[str, frozenset[str]] = field(default_factory=dict)
    # Names the file calls (``f(``, ``.f(``) and does not define itself:
    # whether a function of another file may have callers here, read by text.
    called: frozenset[str] = frozenset()
    # Module-level functions that return a model they loaded weights into
    # without switching its mode (``loads.returns_loaded_model``; RNF006):
    # name -> whether they built it from an ``nn.Module`` class.
    loaders: dict[str, bool] = field(default_factory=dict)
    # Module-level checkpoint helpers that load weights into one of their
    # parameters and switch no mode (``loads.loads_into_param``; RNF006):
    # name -> (the parameter's position, its name).
    loads_into: dict[str, tuple[int, str]] = field(default_factory=dict)
    # Module-level factories: functions whose every ``return`` builds an
    # instance of one module class of the file and switch no mode
    # (``classfacts.returned_class``): name -> that class's summary, so a
    # caller's ``model = create_model(cfg)`` is known as that class.
    factories: dict[str, ClassSummary] = field(default_factory=dict)
    # Module-level factories of a class the file imports (``from nets import
    # Tagger``; ``def load_model(path): model = Tagger(); ...; return model``):
    # name -> the class's dotted name as written, resolved from this file by
    # ``ProjectView.factory_class``.
    factory_refs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Module-level functions whose every ``return`` gives back a value
    # without a graph, whatever they are given (``escape.returns_detached``:
    # SimGNN's ``calculate_loss`` returning a ``math.log`` difference): name
    # -> True. A caller's evaluation storing their results keeps no graph.
    detached: dict[str, bool] = field(default_factory=dict)
    # Module-level functions that show what a model they are given computes
    # (``modes.shows``: print, log, write, save or plot it, and train
    # nothing): name -> which parameters (``regions``' *after-training* signal).
    shows: dict[str, Shown] = field(default_factory=dict)

    def any_function(self, test: Callable[[FunctionSummary], bool]) -> bool:
        methods = (m for c in self.classes.values() for m in c.methods.values())
        return any(test(f) for f in (*self.functions.values(), *methods))


@dataclass(frozen=True)
class ReturnSummary:
    """What the functions of one file return (``returns.ReturnFacts.summaries``:
    ``"build"``, ``"Trainer.load_model"`` -> a wrapper / a parameter
    unchanged), and its import bindings, to follow re-exports. Computed
    apart from ``ModuleSummary``, at the first question: only RNF002 asks,
    about files its ``x.module.train()`` calls reach."""

    functions: dict[str, Returns]
    imports: dict[str, Binding]


@dataclass(frozen=True)
class SelfUses:
    """What the classes of one file read on ``self`` (``selfuses.self_uses``):
    class name -> the attribute names its code and its bases' in that file
    read, or None when that cannot be known (a base of another file or of a
    library, ``getattr(self, name)``); and the file's import bindings, to
    follow re-exports. Computed apart from ``ModuleSummary``, at the first
    question: only RNF003 asks, about the bases of a class whose evaluation
    method runs its model through another method."""

    classes: dict[str, frozenset[str] | None]
    imports: dict[str, Binding]


@dataclass(frozen=True)
class ExternalCall:
    """A call into a function of another file, with how its names map to the caller's."""

    function: FunctionSummary
    receiver: str | None  # caller text bound to ``self``
    args: dict[str, str | None]  # parameter -> caller text
    # ``self`` attribute -> the caller's text for the object the receiver's
    # construction stored there (``BertEvaluator(self.model, ...)``).
    stored: dict[str, str] = field(default_factory=dict)

    @property
    def summary(self) -> Summary:
        return self.function.summary

    def caller_key(self, key: str) -> str | None:
        """The caller's name for the callee's ``key``: only parameters and
        ``self`` are visible to the caller (the callee's globals are not its)."""
        root, _, rest = key.partition(".")
        suffix = "." + rest if rest else ""
        fn = self.function
        if fn.is_method and fn.params and root == fn.params[0]:
            return self.receiver + suffix if self.receiver else None
        arg = self.args.get(root)
        return arg + suffix if arg else None

    def effect_key(self, key: str) -> str | None:
        """``caller_key`` for the callee's mode effects: an attribute of
        ``self`` the receiver's construction stored an object of the caller's
        in is that object (``BertEvaluator(self.model, ...).get_scores()``
        switching ``self.model`` switches the caller's ``self.model``). Only
        for effects: a switch reaches the object whatever the method does
        before or after it, unlike a gradient or a training step through it
        (``ctor_grads`` asks more of those)."""
        fn = self.function
        root, _, rest = key.partition(".")
        if fn.is_method and fn.params and root == fn.params[0] and rest:
            attr, _, below = rest.partition(".")
            held = self.stored.get(attr)
            if held is not None:
                return held + ("." + below if below else "")
        return self.caller_key(key)


# What computes a file's summary from its source and path
# (``rnnfix.analysis.project.summarise.summarise``): handed to the analyses
# below the index that need one, since they cannot import it.
Summariser = Callable[[str, str], "ModuleSummary | None"]


def has_function(
    found: FunctionSummary | ClassSummary | ModuleSummary, test: Callable[[FunctionSummary], bool]
) -> bool:
    """``test`` holds for the function, for a method of the class, or for a
    function or method of the module."""
    if isinstance(found, FunctionSummary):
        return test(found)
    if isinstance(found, ClassSummary):
        return any(test(m) for m in found.methods.values())
    return found.any_function(test)
