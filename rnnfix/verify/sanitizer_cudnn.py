"""cuDNN's RNN check, reproduced: the ``torch._VF`` RNN kernels wrapped, a
node pre-hook on every eval-mode forward that may reach a backward, what is
recorded when one does (or never does), the autograd entry points that tell
when a backward runs, and the ``sys.excepthook`` that records the error real
cuDNN raised."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable
from typing import Any

from rnnfix.verify import messages
from rnnfix.verify import sanitizer_state as shared
from rnnfix.verify.provenance import capture
from rnnfix.verify.records import (
    CUDNN_BACKWARD_IN_EVAL,
    VALIDATION_FORWARD,
    Provenance,
    Record,
    Site,
    format_chain,
)
from rnnfix.verify.sanitizer_state import (
    _CUDNN_NODE_PREFIXES,
    _KERNELS,
    _METADATA_KEY,
    _PROVEN_AFTER,
    MANUAL_UPDATE,
    _internal_error,
    _LiveForward,
    _optimizer_param_ids,
    _register_jit_builtin,
    _Sanitizer,
    _set,
    _skip_dynamo,
)
from rnnfix.verify.sites import (
    RawFrames,
    to_sites,
    user_frames,
    user_sites,
)


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
        self.serial = shared._active.backward_serial if shared._active is not None else 0
        self.last_violation_serial = -1
        self.site_counted = not train

    def on_backward(self, grad_outputs: tuple[Any, ...]) -> None:
        self.reached = True
        san = shared._active
        if san is None:
            return None
        if self.checked_by:
            _on_violation(san, self)
        elif not self.site_counted:
            self.site_counted = True
            san.train_sites[self.forward] = san.train_sites.get(self.forward, 0) + 1
        return None

    def __del__(self) -> None:
        san = shared._active
        # Under torch.compile, Dynamo may build an instance without running
        # __init__ (tracing on fake tensors): its slots are then unset.
        if not getattr(self, "reached", True) and san is not None:
            self.reached = True
            try:
                _record_unreached(san, self, flush=False)
            except Exception:  # noqa: BLE001 - never raise from __del__
                pass


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
        san = shared._active
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


def _record_unreached(san: _Sanitizer, state: _LiveForward, *, flush: bool) -> None:
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
        san = shared._active
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


def _patch_excepthook(san: _Sanitizer) -> None:
    """Real cuDNN raises in backward. Its node pre-hook has recorded the
    violation already when the sanitizer saw the forward; this catches the
    rest (a forward it could not judge), naming the forward from the
    sanitizer's bookkeeping: the live eval-mode forward states."""
    _set(san, sys, "excepthook", _excepthook_wrapper(sys.excepthook))


def _excepthook_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> Any:
        san = shared._active
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
