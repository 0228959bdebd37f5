"""The runtime mode sanitizer: cuDNN's RNN train-mode check, on any machine.

How it sees what cuDNN sees
    ``nn.LSTM/GRU/RNN.forward`` look up ``torch._VF.lstm`` (``gru``,
    ``rnn_tanh``, ``rnn_relu``) at every call and pass ``self.training`` as the
    kernel's ``train`` argument. ``torch._VF`` resolves names through
    ``__getattr__``, so an instance attribute of the same name shadows the C++
    function: every RNN module, and custom modules calling ``_VF.lstm`` or
    ``torch.lstm``, pass through :func:`_kernel_wrapper`, which calls the
    original and inspects the call afterwards. Outputs are returned untouched:
    same tensors, same numerics.

How it decides
    cuDNN fixes the ``train`` flag at forward time and fails the backward
    only if backward executes the RNN's node. So a forward with ``train``
    false, grad enabled, ``torch.backends.cudnn.enabled`` true, a float
    input that is not empty and an output that requires grad gets an autograd
    *node* pre-hook on its outputs' ``grad_fn``. Node pre-hooks run exactly
    when backward executes the node; tensor hooks would also fire when
    ``autograd.grad`` merely captures the output's gradient (a false positive).

    On CUDA tensors real cuDNN decides (the output's node is
    ``CudnnRnnBackward0`` or not): the hook only records, and cuDNN raises.

Also recorded (never raised): validation forwards in train mode or with grad
enabled, an optimizer step while a model it updates is in eval mode, and a
DataParallel/DDP wrapper whose flag differs from its module's.

Dropout and BatchNorm (never raised)
    ``F.dropout`` (and its 1d/2d/3d/alpha variants) call ``torch._VF.dropout``
    (``feature_dropout``, ``alpha_dropout``, ``feature_alpha_dropout``, their
    in-place twins) with the module's ``training``; ``F.batch_norm`` /
    ``F.instance_norm`` call ``torch.batch_norm`` / ``torch.instance_norm``,
    looked up on ``torch`` at every call. Wrapping these sees every module
    call and its flag. A train-mode call with grad disabled (or, for norms, an
    eval-mode call with grad enabled) is judged by the ``training`` flags of
    the modules on the stack: all in train mode is validation without
    ``eval()`` (warning), anything else deliberate (info). Other calls cost a
    flag check or two, no stack walk.

For ``verify --fix``
    the ``nn.Module.train`` wrapper keeps the last ``eval()`` call site per
    module (``provenance.ModeLog``); an eval-mode forward with grad enabled
    takes its provenance (``provenance.capture``) and the ids of the RNN's
    weights, so its record can name the optimizers that update them
    (``Optimizer.__init__`` is wrapped: every optimizer is known before its
    first step). When real cuDNN raises and no hook recorded it, the wrapped
    ``sys.excepthook`` records the error from the live forward states.

Not reachable: TorchScript RNNs and code that bound
``torch._C._VariableFunctions.lstm`` before installation.

torch is imported inside functions only: importing this module is free.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from rnnfix.verify import messages
from rnnfix.verify.cycle import ModelTracker
from rnnfix.verify.provenance import ModeLog, capture
from rnnfix.verify.recorder import Recorder
from rnnfix.verify.records import (
    BATCHNORM_RECALIBRATION,
    CLEAN_CYCLE,
    CUDNN_BACKWARD_IN_EVAL,
    FROZEN_BATCHNORM,
    MC_DROPOUT,
    OPTIMIZER_STEP_IN_EVAL,
    SANITIZER_ERROR,
    VALIDATION_FORWARD,
    WRAPPER_MODE_MISMATCH,
    Provenance,
    Record,
    Severity,
    Site,
    format_chain,
)
from rnnfix.verify.sites import (
    RawFrames,
    modules_on_stack,
    to_sites,
    user_frames,
    user_sites,
)

if TYPE_CHECKING:
    import torch

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


@dataclass
class _Sanitizer:
    mode: Mode
    until_clean_cycle: bool
    recorder: Recorder
    tracker: ModelTracker = field(default_factory=ModelTracker)
    patches: list[_Patch] = field(default_factory=list)
    handles: list[Any] = field(default_factory=list)
    live: weakref.WeakSet[_ForwardState] = field(default_factory=weakref.WeakSet)
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


_active: _Sanitizer | None = None
_fork_hook_registered = False


class _ForwardState:
    """One RNN forward that may still reach a backward.

    Held only by the output nodes (pre-hook and ``metadata``), so it dies with
    the autograd graph; dying unreached means the forward was a validation or
    inference forward that did not need grad.
    """

    __slots__ = (
        "rnn",
        "train",
        "checked_by",
        "forward",
        "dropout_changes_output",
        "reached",
        "serial",
        "last_violation_serial",
        "site_counted",
        "provenance",
        "param_ids",
        "updated_by_hand",
        "__weakref__",
    )

    def __init__(
        self, rnn: str, train: bool, checked_by: str, forward: RawFrames, dropout: bool
    ) -> None:
        self.provenance: Provenance | None = None
        self.param_ids: frozenset[int] = frozenset()
        self.updated_by_hand = False
        self.rnn = rnn
        self.train = train
        self.checked_by = checked_by  # "" when backward through it is fine
        self.forward = forward
        self.dropout_changes_output = dropout
        self.reached = False
        self.serial = _active.backward_serial if _active is not None else 0
        self.last_violation_serial = -1
        self.site_counted = not train

    def on_backward(self, grad_outputs: tuple[Any, ...]) -> None:
        self.reached = True
        san = _active
        if san is None:
            return None
        if self.checked_by:
            _on_violation(san, self)
        elif not self.site_counted:
            self.site_counted = True
            san.train_sites[self.forward] = san.train_sites.get(self.forward, 0) + 1
        return None

    def __del__(self) -> None:
        san = _active
        # Under torch.compile, Dynamo may build an instance without running
        # __init__ (tracing on fake tensors): its slots are then unset.
        if not getattr(self, "reached", True) and san is not None:
            self.reached = True
            try:
                _record_unreached(san, self, flush=False)
            except Exception:  # noqa: BLE001 - never raise from __del__
                pass


# --------------------------------------------------------------------------- public API


def install(
    mode: Mode = "raise",
    *,
    report_dir: Path | str | None = None,
    until_clean_cycle: bool = False,
    stop_when_seen: bool = False,
) -> None:
    """Install the sanitizer in this process (idempotent: reinstalls with the
    new settings).

    ``mode="raise"`` raises cuDNN's exact ``RuntimeError`` where a GPU would;
    ``mode="record"`` only records. Both modes record everything else.
    ``report_dir``: write this process's JSON report there (the runner reads
    it). ``until_clean_cycle``: exit the process with status 0 via
    ``os._exit`` right after the optimizer step that completes a clean cycle
    (see :mod:`rnnfix.verify.cycle`), after flushing the report and stdio.
    ``stop_when_seen`` (with ``until_clean_cycle``, for ``verify --fix``):
    a model seen taking an optimizer step in eval mode counts as done too.
    ``os._exit`` rather than ``SystemExit`` because user ``finally`` blocks
    and framework handlers would otherwise keep running the job.
    """
    global _active, _fork_hook_registered
    if mode not in ("raise", "record"):
        raise ValueError(f"mode must be 'raise' or 'record', not {mode!r}")
    uninstall()
    import torch  # noqa: F401 - fail early with ImportError when missing

    directory = Path(report_dir) if report_dir is not None else None
    san = _Sanitizer(mode, until_clean_cycle, Recorder(mode, directory))
    san.stop_when_seen = stop_when_seen and until_clean_cycle
    _active = san
    try:
        _patch_kernels(san)
        _patch_layers(san)
        _patch_autograd(san)
        _patch_module_train(san)
        _patch_wrappers(san)
        _hook_optimizers(san)
        _patch_excepthook(san)
    except BaseException:
        uninstall()
        raise
    if not _fork_hook_registered:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        atexit.register(_at_exit)
        _fork_hook_registered = True
    san.recorder.flush()  # an empty report says "the sanitizer ran here"


def uninstall() -> None:
    """Restore everything :func:`install` replaced. Records are kept."""
    global _active
    san = _active
    if san is None:
        return
    for patch in reversed(san.patches):
        if patch.had_own:
            setattr(patch.owner, patch.name, patch.original)
        else:
            try:
                delattr(patch.owner, patch.name)
            except AttributeError:
                pass
    for handle in san.handles:
        handle.remove()
    san.patches.clear()
    san.handles.clear()
    _active = None
    _last_records[:] = san.recorder.records()


_last_records: list[Record] = []


def is_installed() -> bool:
    return _active is not None


def records() -> list[Record]:
    """Records of the installed sanitizer, or of the last one uninstalled."""
    return _active.recorder.records() if _active is not None else list(_last_records)


def clear_records() -> None:
    _last_records.clear()
    if _active is not None:
        _active.recorder.clear()


def sweep_unreached() -> None:
    """Record now every live forward that has not reached a backward although a
    backward ran after it (tests and ``--until-clean-cycle`` use this instead of
    waiting for the graph to be freed)."""
    if _active is not None:
        _sweep(_active, _active.backward_serial)


# --------------------------------------------------------------------------- RNN kernels


def _patch_kernels(san: _Sanitizer) -> None:
    import torch
    import torch._VF

    vf = sys.modules["torch._VF"]
    functions = torch._C._VariableFunctions
    for name, rnn in _KERNELS.items():
        original = getattr(functions, name)
        wrapper = _kernel_wrapper(original, rnn)
        _set(san, vf, name, wrapper)
        if getattr(torch, name, None) is original:
            _set(san, torch, name, wrapper)
            _register_jit_builtin(wrapper, name)


def _kernel_wrapper(original: Callable[..., Any], rnn: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def rnn_kernel(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        san = _active
        if san is not None:
            try:
                _after_rnn(san, rnn, args, kwargs, result)
            except Exception as exc:  # noqa: BLE001 - our bug must not break training
                _internal_error(san, exc)
        return result

    return _skip_dynamo(rnn_kernel)


def _rnn_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, float, int] | None:
    """``(train, dropout, num_layers)`` of either kernel overload, or None.

    Plain: ``(input, hx, params, has_biases, num_layers, dropout, train, ...)``;
    packed: ``(data, batch_sizes, hx, params, has_biases, num_layers, dropout,
    train, ...)``. Argument 3 tells them apart: a bool (has_biases) or a list.
    """
    packed = len(args) > 3 and not isinstance(args[3], bool)
    first = 4 if packed else 3  # index of has_biases
    names = ("num_layers", "dropout", "train")
    values: list[Any] = []
    for offset, name in enumerate(names, start=first + 1):
        if name in kwargs:
            values.append(kwargs[name])
        elif len(args) > offset:
            values.append(args[offset])
        else:
            return None
    num_layers, dropout, train = values
    return bool(train), float(dropout), int(num_layers)


def _after_rnn(
    san: _Sanitizer, rnn: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
) -> None:
    import torch

    recorder = san.recorder
    recorder.rnn_forwards += 1
    parsed = _rnn_arguments(args, kwargs)
    if parsed is None or not isinstance(result, tuple):
        return
    train, dropout, num_layers = parsed
    dropout_changes_output = dropout > 0 and num_layers > 1
    if not train:
        san.mode_log.eval_forwards += 1
    x = args[0] if args else kwargs.get("input", kwargs.get("data"))
    is_cuda = isinstance(x, torch.Tensor) and x.is_cuda
    if is_cuda:
        recorder.rnn_forwards_cuda += 1
    if not torch.is_grad_enabled():
        if train:
            # Under no_grad nothing can reach a backward: this is a validation
            # or inference forward, and it ran in train mode.
            _record_validation(san, rnn, True, False, dropout_changes_output, user_sites())
        return
    if not any(getattr(item, "requires_grad", False) for item in result):
        return  # nothing requires grad: no backward can come
    frames = user_frames()
    if train and san.train_sites.get(frames, 0) >= _PROVEN_AFTER:
        return
    nodes = _output_nodes(result)
    checked_by = ""
    if not train and torch._C._get_cudnn_enabled():
        if is_cuda:
            checked_by = _real_backend(nodes)
        elif _cudnn_would_run(x):
            checked_by = "emulated"
    state = _ForwardState(rnn, train, checked_by, frames, dropout_changes_output)
    if not train:
        _take_provenance(san, state, args)
    for node in nodes:
        node.register_prehook(state.on_backward)
        node.metadata[_METADATA_KEY] = state
    san.live.add(state)


def _take_provenance(san: _Sanitizer, state: _ForwardState, args: tuple[Any, ...]) -> None:
    """What ``verify --fix`` needs if a backward reaches this forward: the
    module user code called, how it named it, the ``eval()`` behind it, and
    the RNN's weights (to name the optimizers that update them)."""
    from torch import nn

    try:
        state.provenance = capture(
            sys._getframe(3),  # the RNN module's forward (kernel <- wrapper <- _after_rnn)
            san.mode_log,
            nn.Module,
            state.dropout_changes_output,
            san.provenance_cache,
            state.forward,
        )
    except Exception:  # noqa: BLE001 - only --fix needs it: the check itself goes on
        state.provenance = None
    packed = len(args) > 3 and not isinstance(args[3], bool)
    weights = args[3 if packed else 2] if len(args) > 3 else ()
    if isinstance(weights, (list, tuple)) and weights:
        state.param_ids = frozenset(id(w) for w in weights)
        # Only while recording for --fix: a reduction per forward (a sync on CUDA).
        if san.stop_when_seen and not _optimizers_of(san, state.param_ids):
            checksum = float(weights[0].detach().sum())
            before = san.fingerprints.get(state.param_ids)
            san.fingerprints[state.param_ids] = checksum
            state.updated_by_hand = before is not None and before != checksum


def _optimizers_of(san: _Sanitizer, param_ids: frozenset[int]) -> tuple[str, ...]:
    names: list[str] = []
    for optimizer in list(san.optimizers):
        if param_ids and not param_ids.isdisjoint(_optimizer_param_ids(optimizer)):
            name = type(optimizer).__name__
            if name not in names:
                names.append(name)
    return tuple(names)


def _output_nodes(result: tuple[Any, ...]) -> list[Any]:
    """Distinct ``grad_fn`` nodes of the kernel's outputs (output, h_n, c_n)."""
    nodes: list[Any] = []
    for item in result:
        node = getattr(item, "grad_fn", None)
        if node is not None and all(node is not n for n in nodes):
            nodes.append(node)
    return nodes


def _cudnn_would_run(x: object) -> bool:
    """cuDNN's own choice on a GPU: a float tensor that is not empty. bf16 is
    included: cuDNN >= 9.13 on sm80+ takes it, which is what a GPU run gets."""
    import torch

    return (
        isinstance(x, torch.Tensor)
        and x.dtype in (torch.float16, torch.float32, torch.float64, torch.bfloat16)
        and x.numel() > 0
    )


def _real_backend(nodes: list[Any]) -> str:
    """On CUDA, did cuDNN (or MIOpen) actually run? Its autograd node says so."""
    for node in nodes:
        candidates = [node] + [fn for fn, _ in getattr(node, "next_functions", ()) if fn]
        for candidate in candidates:
            name = type(candidate).__name__
            if name.startswith(_CUDNN_NODE_PREFIXES[0]):
                return "cudnn"
            if name.startswith(_CUDNN_NODE_PREFIXES[1]):
                return "miopen"
    return ""


def _on_violation(san: _Sanitizer, state: _ForwardState) -> None:
    # One record per forward per backward call, however many of its output
    # nodes (output, h_n, c_n) the backward executes.
    if state.last_violation_serial == san.backward_serial:
        return
    state.last_violation_serial = san.backward_serial
    backward = user_sites(san.backward_frame) if san.backward_frame else user_sites()
    record = Record(
        kind=CUDNN_BACKWARD_IN_EVAL,
        severity="error",
        message=messages.cudnn_backward_in_eval(state.rnn, state.checked_by),
        forward=to_sites(state.forward),
        backward=backward,
        subject=state.rnn,
        checked_by=state.checked_by,
        optimizers=_optimizers_of(san, state.param_ids)
        or ((MANUAL_UPDATE,) if state.updated_by_hand else ()),
        provenance=state.provenance,
    )
    if state.param_ids:
        san.violation_params.setdefault(record.key(), state.param_ids)
    san.recorder.add(record, flush=True)
    if san.mode == "raise" and state.checked_by == "emulated":
        error = RuntimeError(messages.CUDNN_ERROR)
        if hasattr(error, "add_note"):  # Python 3.11+; the message itself stays exact
            error.add_note(messages.emulation_note(state.rnn, format_chain(record.forward) or "?"))
        raise error


def _record_unreached(san: _Sanitizer, state: _ForwardState, *, flush: bool) -> None:
    _record_validation(
        san,
        state.rnn,
        state.train,
        True,
        state.dropout_changes_output,
        to_sites(state.forward),
        flush,
    )


def _record_validation(
    san: _Sanitizer,
    rnn: str,
    train: bool,
    grad_enabled: bool,
    dropout_changes_output: bool,
    forward: tuple[Site, ...],
    flush: bool = True,
) -> None:
    quiet = train and not grad_enabled and not dropout_changes_output
    san.recorder.add(
        Record(
            kind=VALIDATION_FORWARD,
            severity="info" if quiet else "warning",
            message=messages.validation_forward(rnn, train, grad_enabled, dropout_changes_output),
            forward=forward,
            subject=rnn,
        ),
        flush=flush,
    )


def _sweep(san: _Sanitizer, before_serial: int) -> None:
    for state in list(san.live):
        if not state.reached and state.serial < before_serial:
            state.reached = True
            _record_unreached(san, state, flush=False)
    san.recorder.flush()


# --------------------------------------------------------------------------- Dropout and BatchNorm


def _patch_layers(san: _Sanitizer) -> None:
    """Wrap the dropout kernels where ``torch.nn.functional`` looks them up at
    every call (``torch._VF``, as for the RNNs) and ``torch.batch_norm`` /
    ``torch.instance_norm`` (``F.batch_norm``/``F.instance_norm`` look them up
    on the ``torch`` module at every call). Every Dropout*/AlphaDropout/
    BatchNorm*/SyncBatchNorm (unsynchronised)/InstanceNorm module call goes
    through them with its ``training`` flag."""
    import torch
    import torch._VF

    vf = sys.modules["torch._VF"]
    functions = torch._C._VariableFunctions
    grad_enabled = torch._C.is_grad_enabled
    for name, functional in _DROPOUT_KERNELS.items():
        original = getattr(functions, name)
        wrapper = _dropout_wrapper(original, functional, grad_enabled)
        _set(san, vf, name, wrapper)
        if getattr(torch, name, None) is original:
            _set(san, torch, name, wrapper)
            _register_jit_builtin(wrapper, name)
    for name, flag in _NORM_KERNELS.items():
        original = getattr(functions, name)
        wrapper = _norm_wrapper(original, f"F.{name}", flag, grad_enabled)
        if getattr(torch, name, None) is original:
            _set(san, torch, name, wrapper)
            _register_jit_builtin(wrapper, name)


def _dropout_wrapper(
    original: Callable[..., Any], functional: str, grad_enabled: Callable[[], bool]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def dropout_kernel(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        # Training (grad on) and eval mode cost one or two flag checks.
        if not grad_enabled() and (args[2] if len(args) > 2 else kwargs.get("train")):
            san = _active
            if san is not None:
                try:
                    _after_dropout(san, functional, args, kwargs)
                except Exception as exc:  # noqa: BLE001 - our bug must not break training
                    _internal_error(san, exc)
        return result

    return _skip_dynamo(dropout_kernel)


def _norm_wrapper(
    original: Callable[..., Any], functional: str, flag: str, grad_enabled: Callable[[], bool]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def norm_kernel(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        train = args[5] if len(args) > 5 else kwargs.get(flag, False)
        # Train mode with grad on (training) and eval mode under no_grad
        # (validation) cost this one comparison.
        if bool(train) != grad_enabled():
            san = _active
            if san is not None:
                try:
                    _after_norm(san, functional, bool(train), args, kwargs)
                except Exception as exc:  # noqa: BLE001 - our bug must not break training
                    _internal_error(san, exc)
        return result

    return _skip_dynamo(norm_kernel)


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _stack_modules(frame: FrameType | None) -> tuple[list[Any], bool, bool]:
    """Modules running on the stack, innermost first, without DataParallel/DDP
    (they never read their own flag); whether ``update_bn`` is running; and
    whether compiled code ran the layer. ``torch.compile`` leaves no frame of
    the layers: its FX ``GraphModule`` is dropped and ``OptimizedModule``
    stands for the model it compiled."""
    from torch import nn

    modules, recalibrating = modules_on_stack(frame, nn.Module)
    wrappers: tuple[type, ...] = (nn.DataParallel, nn.parallel.DistributedDataParallel)
    fx = sys.modules.get("torch.fx")
    graph_module = getattr(fx, "GraphModule", None)
    optimized = getattr(sys.modules.get("torch._dynamo.eval_frame"), "OptimizedModule", None)
    kept: list[Any] = []
    compiled = False
    for module in modules:
        if graph_module is not None and isinstance(module, graph_module):
            compiled = True
            continue
        if optimized is not None and isinstance(module, optimized):
            module = getattr(module, "_orig_mod", module)
        if not isinstance(module, wrappers) and all(module is not m for m in kept):
            kept.append(module)
    return kept, recalibrating, compiled


def _layer_name(inner: Any, compiled: bool, functional: str) -> str:
    if inner is None:
        return functional
    if compiled:
        return f"{functional} in compiled {type(inner).__name__}"
    return type(inner).__name__


def _tracing() -> bool:
    """Dynamo/AOT run the kernels on fake tensors while compiling."""
    import torch

    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None


def _after_dropout(
    san: _Sanitizer, functional: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Dropout under no_grad: a validation/inference forward. Train mode there
    is a mode bug unless the dropout was switched on deliberately."""
    severity: Severity
    train = _argument(args, kwargs, 2, "train")
    p = _argument(args, kwargs, 1, "p")
    if not train or not p or p <= 0:
        return
    if _tracing():
        return
    frame = sys._getframe(2)  # the caller of the kernel (F.dropout)
    modules, recalibrating, compiled = _stack_modules(frame)
    if recalibrating:
        return  # swa_utils.update_bn runs the whole model in train mode on purpose
    forward = user_sites(frame)
    site = str(forward[0]) if forward else "an unknown place"
    inner = modules[0] if modules else None
    layer = _layer_name(inner, compiled, functional)
    eval_outer = next((m for m in modules[1:] if not m.training), None)
    if inner is None or not inner.training:
        # F.dropout(x, training=True) called by a module in eval mode (or by
        # no module at all): dropout switched on deliberately.
        kind, severity = MC_DROPOUT, "info"
        message = messages.mc_dropout(layer, site, None if inner is None else layer, forced=True)
    elif eval_outer is not None:
        kind, severity = MC_DROPOUT, "info"
        message = messages.mc_dropout(layer, site, type(eval_outer).__name__, forced=False)
    else:
        kind, severity = VALIDATION_FORWARD, "warning"
        message = messages.layer_in_train_mode_under_no_grad(layer, site, True, False)
    san.recorder.add(
        Record(kind=kind, severity=severity, message=message, forward=forward, subject=layer)
    )


def _after_norm(
    san: _Sanitizer, functional: str, train: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A norm with running statistics in train mode under no_grad (validation
    in train mode, unless on purpose), or in eval mode with grad enabled inside
    a module in train mode (frozen BatchNorm)."""
    if (
        _argument(args, kwargs, 3, "running_mean") is None
        and _argument(args, kwargs, 4, "running_var") is None
    ):
        return  # no running statistics: train and eval mode compute the same
    if _tracing():
        return
    frame = sys._getframe(2)  # the caller of the kernel (F.batch_norm)
    modules, recalibrating, compiled = _stack_modules(frame)
    inner = modules[0] if modules else None
    layer = _layer_name(inner, compiled, functional)
    if not train:
        # Eval mode, grad enabled: frozen if the norm's own module or one
        # around it trains; otherwise a gradient through an eval-mode model.
        owner = next((m for m in modules if m.training), None)
        if owner is None:
            return
        forward = user_sites(frame)
        site = str(forward[0]) if forward else "an unknown place"
        san.recorder.add(
            Record(
                kind=FROZEN_BATCHNORM,
                severity="info",
                message=messages.frozen_batchnorm(layer, site, type(owner).__name__),
                forward=forward,
                subject=layer,
            )
        )
        return
    forward = user_sites(frame)
    site = str(forward[0]) if forward else "an unknown place"
    eval_outer = next((m for m in modules[1:] if not m.training), None)
    severity: Severity
    why = ""
    if recalibrating:
        why = "torch.optim.swa_utils.update_bn recomputes them"
    elif inner is None:
        why = f"{functional} called with training=True outside any module"
    elif not inner.training:
        why = f"{layer} is in eval mode but passed training=True"
    elif eval_outer is not None:
        why = (
            f"only the {layer} is in train mode, inside {type(eval_outer).__name__} in "
            "eval mode: test-time adaptation"
        )
    if why:
        kind, severity = BATCHNORM_RECALIBRATION, "info"
        message = messages.batchnorm_recalibration(layer, site, why)
    else:
        momentum = _argument(args, kwargs, 6, "momentum")
        kind, severity = VALIDATION_FORWARD, "warning"
        message = messages.layer_in_train_mode_under_no_grad(
            layer, site, False, momentum is None or momentum != 0
        )
    san.recorder.add(
        Record(kind=kind, severity=severity, message=message, forward=forward, subject=layer)
    )


# --------------------------------------------------------------------------- autograd entry points


def _patch_autograd(san: _Sanitizer) -> None:
    import torch.autograd

    autograd = torch.autograd
    _set(san, autograd, "backward", _backward_wrapper(autograd.backward, inputs_at=5))
    _set(san, autograd, "grad", _backward_wrapper(autograd.grad, inputs_at=1))


def _backward_wrapper(original: Callable[..., Any], inputs_at: int) -> Callable[..., Any]:
    """Count backward calls and remember the caller's frame for the hooks.

    ``inputs`` whose gradient is captured (``autograd.grad(loss, rnn_out)``)
    count as reached: the forward served a backward even though the RNN's own
    node did not run.
    """

    @functools.wraps(original)
    def backward_entry(*args: Any, **kwargs: Any) -> Any:
        san = _active
        if san is None:
            return original(*args, **kwargs)
        inputs = kwargs.get("inputs", args[inputs_at] if len(args) > inputs_at else None)
        if inputs is not None:
            _mark_captured(inputs)
        san.backward_serial += 1
        outer = san.backward_frame
        san.backward_frame = sys._getframe(1)
        try:
            return original(*args, **kwargs)
        finally:
            san.backward_frame = outer

    return _skip_dynamo(backward_entry)


def _mark_captured(inputs: object) -> None:
    items: Iterable[object]
    if isinstance(inputs, dict):
        items = inputs.values()
    elif isinstance(inputs, (tuple, list)):
        items = inputs
    else:
        items = (inputs,)
    for item in items:
        node = getattr(item, "grad_fn", None)
        if node is not None:
            state = node.metadata.get(_METADATA_KEY)
            if state is not None:
                state.reached = True


# --------------------------------------------------------------------------- modes and optimizers


def _patch_module_train(san: _Sanitizer) -> None:
    from torch import nn

    original = nn.Module.train

    @functools.wraps(original)
    def train(self: nn.Module, mode: bool = True) -> nn.Module:
        current = _active
        if current is None or current.train_depth:
            return original(self, mode)
        # Only the outermost call names a model; Module.train recurses into
        # children through this same method.
        current.train_depth += 1
        try:
            result = original(self, mode)
        finally:
            current.train_depth -= 1
        try:
            current.tracker.on_mode_call(self, bool(mode), current.stepped_before)
            current.mode_log.on_mode_call(self, bool(mode), sys._getframe(1))
        except Exception as exc:  # noqa: BLE001 - our bug must not break training
            _internal_error(current, exc)
        return result

    _set(san, nn.Module, "train", train)


def _patch_wrappers(san: _Sanitizer) -> None:
    from torch import nn

    for cls in (nn.DataParallel, nn.parallel.DistributedDataParallel):
        _set(san, cls, "forward", _wrapper_forward(cls.forward, cls.__name__))


def _wrapper_forward(original: Callable[..., Any], wrapper_name: str) -> Callable[..., Any]:
    import torch

    @functools.wraps(original)
    def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        san = _active
        inner = getattr(self, "module", None)
        if (
            san is not None
            and isinstance(inner, torch.nn.Module)
            and self.training != inner.training
        ):
            san.recorder.add(
                Record(
                    kind=WRAPPER_MODE_MISMATCH,
                    severity="warning",
                    message=messages.wrapper_mode_mismatch(
                        wrapper_name, self.training, inner.training
                    ),
                    forward=user_sites(),
                    subject=wrapper_name,
                )
            )
        return original(self, *args, **kwargs)

    return _skip_dynamo(forward)


def _hook_optimizers(san: _Sanitizer) -> None:
    import torch.optim.optimizer as optimizer_module

    san.handles.append(optimizer_module.register_optimizer_step_pre_hook(_before_step))
    san.handles.append(optimizer_module.register_optimizer_step_post_hook(_after_step))
    original = optimizer_module.Optimizer.__init__

    # Every optimizer, known before its first step: a backward that fails
    # (real cuDNN raises) still says which optimizer would have stepped.
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        current = _active
        if current is not None:
            current.optimizers.add(self)

    _set(san, optimizer_module.Optimizer, "__init__", __init__)


def _effective_training(model: Any) -> bool:
    """The mode that governs the computation. DataParallel and DDP never read
    their own flag (their module's flags decide), so ``wrapper.eval();
    wrapper.module.train()`` trains correctly: that case is a
    wrapper-mode-mismatch warning, not an eval-mode training step."""
    from torch import nn

    if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        return bool(model.module.training)
    return bool(model.training)


def _optimizer_param_ids(optimizer: Any) -> set[int]:
    return {id(p) for group in optimizer.param_groups for p in group["params"]}


def _before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    san = _active
    if san is None:
        return
    try:
        _check_step(san, optimizer)
    except Exception as exc:  # noqa: BLE001 - our bug must not break training
        _internal_error(san, exc)


def _check_step(san: _Sanitizer, optimizer: Any) -> None:
    san.recorder.optimizer_steps += 1
    san.optimizers.add(optimizer)
    san.stepped.add(optimizer)
    if san.violation_params:
        _name_optimizer(san, optimizer)
    tracker = san.tracker
    if not tracker.models:
        return
    updated: set[int] | None = None
    for model, state in list(tracker.models.items()):
        training = _effective_training(model)
        if training and not san.until_clean_cycle:
            continue  # only eval-mode models can be a finding
        if updated is None:
            updated = _optimizer_param_ids(optimizer)
        if state.param_ids(model).isdisjoint(updated):
            continue
        if training:
            state.on_step()
            continue
        nested = tracker.nested_in_training(model)
        if not nested:
            state.bug_seen = True
        san.recorder.add(
            Record(
                kind=OPTIMIZER_STEP_IN_EVAL,
                severity="info" if nested else "error",
                message=messages.optimizer_step_in_eval(type(model).__name__, nested),
                backward=user_sites(),
                subject=type(model).__name__,
                optimizers=(type(optimizer).__name__,),
            )
        )


def _name_optimizer(san: _Sanitizer, optimizer: Any) -> None:
    """Add ``optimizer`` to the cuDNN records whose RNN it updates."""
    name = type(optimizer).__name__
    updated: set[int] | None = None
    changed = False
    for record in san.recorder.records():
        ids = san.violation_params.get(record.key())
        if ids is None or name in record.optimizers:
            continue
        if updated is None:
            updated = _optimizer_param_ids(optimizer)
        if not ids.isdisjoint(updated):
            record.optimizers = (*record.optimizers, name)
            changed = True
    if changed:
        san.recorder.flush()


def _after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    san = _active
    if san is None or not san.until_clean_cycle:
        return
    try:
        models = san.tracker.cycle_complete(allow_bugs=san.stop_when_seen)
    except Exception as exc:  # noqa: BLE001 - our bug must not break training
        _internal_error(san, exc)
        return
    if models is None:
        return
    if san.stop_when_seen:
        # verify --fix: every model's bug (or clean cycle) has been seen.
        _sweep(san, san.backward_serial)
        _stop_cleanly(san, models)
    if san.recorder.has_problems():
        return
    # Forwards that the last backward did not reach are validation forwards
    # whose graph is still alive; judge them now rather than never.
    _sweep(san, san.backward_serial)
    if san.recorder.has_problems():
        return
    _stop_cleanly(san, models)


def _stop_cleanly(san: _Sanitizer, models: list[str]) -> None:
    san.recorder.add(
        Record(
            kind=CLEAN_CYCLE,
            severity="info",
            message=messages.clean_cycle(models),
            backward=user_sites(),
        ),
        flush=False,
    )
    san.recorder.stopped_after_clean_cycle = True
    san.recorder.close()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


# --------------------------------------------------------------------------- process lifecycle


def _at_exit() -> None:
    san = _active
    if san is None:
        return
    for state in list(san.live):
        if not state.reached:
            state.reached = True
            _record_unreached(san, state, flush=False)
    san.recorder.close()


def _after_fork_in_child() -> None:
    if _active is not None:
        _active.recorder.after_fork_in_child()
        _active.live = weakref.WeakSet()


# --------------------------------------------------------------------------- helpers


def _patch_excepthook(san: _Sanitizer) -> None:
    """Real cuDNN raises in backward. Its node pre-hook has recorded the
    violation already when the sanitizer saw the forward; this catches the
    rest (a forward it could not judge), naming the forward from the
    sanitizer's bookkeeping: the live eval-mode forward states."""
    _set(san, sys, "excepthook", _excepthook_wrapper(sys.excepthook))


def _excepthook_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> Any:
        san = _active
        if san is not None:
            try:
                record_uncaught_cudnn_error(san, value, tb)
            except Exception as exc:  # noqa: BLE001 - the user's error comes first
                _internal_error(san, exc)
        return original(kind, value, tb)

    return excepthook


def record_uncaught_cudnn_error(san: _Sanitizer, error: BaseException, tb: Any) -> bool:
    """Record cuDNN's (or MIOpen's) error raised by a backward no record
    explains yet. True if it recorded one."""
    text = str(error)
    if messages.CUDNN_ERROR not in text and messages.MIOPEN_ERROR not in text:
        return False
    if any(r.kind == CUDNN_BACKWARD_IN_EVAL for r in san.recorder.records()):
        return False  # the node pre-hook saw it: the record has the whole story
    frame = None
    while tb is not None:
        frame = tb.tb_frame
        tb = tb.tb_next
    candidates = [s for s in list(san.live) if not s.train and not s.reached]
    state = max(candidates, key=lambda s: s.serial, default=None)
    checked_by = "miopen" if messages.MIOPEN_ERROR in text else "cudnn"
    san.recorder.add(
        Record(
            kind=CUDNN_BACKWARD_IN_EVAL,
            severity="error",
            message=messages.cudnn_backward_in_eval(state.rnn if state else "RNN", checked_by),
            forward=to_sites(state.forward) if state else (),
            backward=user_sites(frame) if frame is not None else (),
            subject=state.rnn if state else "RNN",
            checked_by=checked_by,
            optimizers=_optimizers_of(san, state.param_ids) if state else (),
            provenance=state.provenance if state else None,
        )
    )
    return True


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
