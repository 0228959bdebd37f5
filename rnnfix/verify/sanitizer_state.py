"""The mode sanitizer's state and the patching helpers its parts share: the
installed sanitizer (``_active``), what it replaced (``_Patch``), and the
kernel tables. Names with a leading underscore are private to the sanitizer's
modules (``sanitizer``, ``sanitizer_cudnn``, ``sanitizer_layers``,
``sanitizer_steps``)."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Literal, Protocol

from rnnfix.verify.cycle import ModelTracker
from rnnfix.verify.provenance import ModeLog
from rnnfix.verify.recorder import Recorder
from rnnfix.verify.records import (
    SANITIZER_ERROR,
    Provenance,
    Record,
)
from rnnfix.verify.sites import (
    RawFrames,
)

Mode = Literal["raise", "record"]

#: After this many train-mode forwards from the same call site (the same
#: chain of user frames) have reached a backward, later train-mode forwards
#: from it get no hooks: it is a training call site, and hooking every forward
#: costs ~25 us (three node hooks). Eval-mode forwards are always hooked, so
#: cuDNN's check stays exact; only a train-mode validation forward sharing
#: its whole call chain with training could go unrecorded.
_PROVEN_AFTER = 3

_KERNELS = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN (tanh)", "rnn_relu": "RNN (relu)"}
#: Dropout kernels (``torch._VF`` names, called by ``torch.nn.functional``)
#: and the functional that calls each: ``(input, p, train)``.
_DROPOUT_KERNELS = {
    "dropout": "F.dropout",
    "dropout_": "F.dropout",
    "alpha_dropout": "F.alpha_dropout",
    "alpha_dropout_": "F.alpha_dropout",
    "feature_dropout": "F.dropout1d/2d/3d",
    "feature_dropout_": "F.dropout1d/2d/3d",
    "feature_alpha_dropout": "F.feature_alpha_dropout",
    "feature_alpha_dropout_": "F.feature_alpha_dropout",
}
#: Norm kernels (``torch.<name>``, called by ``F.batch_norm``/``F.instance_norm``):
#: ``(input, weight, bias, running_mean, running_var, <flag>, momentum, eps,
#: cudnn_enabled)``, and the name of the flag argument.
_NORM_KERNELS = {"batch_norm": "training", "instance_norm": "use_input_stats"}
_METADATA_KEY = "rnnfix.verify"
#: Named as a record's optimizer when no optimizer holds the RNN's weights
#: but they changed between two of its forwards: a hand-written update.
MANUAL_UPDATE = "none, the weights are updated by hand"
_CUDNN_NODE_PREFIXES = ("CudnnRnnBackward", "MiopenRnnBackward")


@dataclass
class _Patch:
    """One attribute we replaced, and how to put it back."""

    owner: object
    name: str
    original: object
    had_own: bool  # False: the attribute came from __getattr__ or a base class


class _LiveForward(Protocol):
    """An RNN forward the sanitizer holds (weakly) until it reaches a backward
    or dies: ``sanitizer_cudnn._ForwardState``, which imports this module, so
    it is named here by what its readers use."""

    rnn: str
    train: bool
    forward: RawFrames
    dropout_changes_output: bool
    reached: bool
    serial: int
    param_ids: frozenset[int]
    provenance: Provenance | None


@dataclass
class _Sanitizer:
    mode: Mode
    until_clean_cycle: bool
    recorder: Recorder
    tracker: ModelTracker = field(default_factory=ModelTracker)
    patches: list[_Patch] = field(default_factory=list)
    handles: list[Any] = field(default_factory=list)
    live: weakref.WeakSet[_LiveForward] = field(default_factory=weakref.WeakSet)
    #: Incremented by every backward()/grad() call, read by forward states.
    backward_serial: int = 0
    #: The caller's frame while a backward()/grad() call runs: hooks may run on
    #: an engine thread (CUDA) whose own stack does not reach the user's code.
    backward_frame: FrameType | None = None
    train_depth: int = 0
    #: Train-mode forward call sites (user frames) and how many of their
    #: forwards reached a backward. See :data:`_PROVEN_AFTER`.
    train_sites: dict[RawFrames, int] = field(default_factory=dict)
    #: ``until_clean_cycle`` for ``verify --fix``: stop once every trained
    #: model has completed a cycle or has been seen training in eval mode.
    stop_when_seen: bool = False
    #: The last ``eval()`` per module, for ``verify --fix``.
    mode_log: ModeLog = field(default_factory=ModeLog)
    provenance_cache: dict[tuple[object, ...], Provenance | None] = field(default_factory=dict)
    #: Every optimizer built so far, and those that took a step, weakly held.
    optimizers: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    stepped: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    #: Parameter ids of the RNN of each cuDNN record, to name its optimizers.
    violation_params: dict[tuple[object, ...], frozenset[int]] = field(default_factory=dict)
    #: A checksum of an RNN's first weight at its last eval-mode forward with
    #: grad, for RNNs no optimizer holds: a change means code updates the
    #: weights by hand (``p.data.add_(p.grad, alpha=-lr)``), i.e. trains.
    fingerprints: dict[frozenset[int], float] = field(default_factory=dict)

    def stepped_before(self, model: Any) -> bool:
        """An optimizer that has stepped holds parameters of ``model``."""
        if not self.stepped:
            return False
        ids = {id(p) for p in model.parameters()}
        return any(not ids.isdisjoint(_optimizer_param_ids(o)) for o in list(self.stepped))


#: The installed sanitizer; the parts read it at every call.
_active: _Sanitizer | None = None


def _optimizer_param_ids(optimizer: Any) -> set[int]:
    return {id(p) for group in optimizer.param_groups for p in group["params"]}


# --------------------------------------------------------------------------- helpers


def _internal_error(san: _Sanitizer, exc: Exception) -> None:
    """A bug in the sanitizer: say so once (the verdict turns into exit 2)
    and let the user's program go on unchecked at that point."""
    message = f"sanitizer failed: {type(exc).__name__}: {exc}"
    if san.recorder.add(Record(SANITIZER_ERROR, "error", message)):
        sys.stderr.write(f"rnnfix verify: {message}\n")


def _set(san: _Sanitizer, owner: object, name: str, value: object) -> None:
    had_own = name in getattr(owner, "__dict__", {})
    san.patches.append(_Patch(owner, name, getattr(owner, name), had_own))
    setattr(owner, name, value)


def _skip_dynamo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Keep Dynamo out of our wrappers so the check still runs under
    ``torch.compile`` (Dynamo graph-breaks on RNN modules and runs them
    eagerly). Uses the C-level switch: importing ``torch._dynamo`` would add
    a second to every process start."""
    try:
        from torch._C._dynamo import eval_frame

        strategy = eval_frame._FrameExecStrategy(
            eval_frame._FrameAction.SKIP, eval_frame._FrameAction.DEFAULT
        )
        eval_frame.set_code_exec_strategy(fn.__code__, strategy)
    except (ImportError, AttributeError, TypeError, RuntimeError):
        pass
    fn._torchdynamo_disable = True  # type: ignore[attr-defined]
    return fn


def _register_jit_builtin(wrapper: Callable[..., Any], name: str) -> None:
    """TorchScript maps ``torch.lstm`` to ``aten::lstm`` by object identity in a
    table built once; teach it the wrapper so scripting still works."""
    builtins = sys.modules.get("torch.jit._builtins")
    table = getattr(builtins, "_builtin_table", None)
    if isinstance(table, dict):
        table[id(wrapper)] = f"aten::{name}"
