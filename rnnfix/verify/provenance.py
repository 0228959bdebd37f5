"""Run-time provenance of an eval-mode RNN forward, for ``verify --fix``.

When an RNN runs forward in eval mode with grad enabled (a forward a backward
may reach: cuDNN's failing case), the sanitizer takes, from the live stack:

- the module the user's code called (the outermost ``Module.__call__`` around
  the RNN) and the frame that called it;
- the user frames from that call outwards and, per frame, the expressions that
  name that module there (``model``, ``self.model``, ``models["tagger"]``):
  found by reading locals, instance dictionaries and container entries, and
  checked against the live object; nothing is evaluated, no property runs;
- the ``eval()``/``train(False)`` that last put the RNN (or a module around
  it) in eval mode: :class:`ModeLog`, fed by the sanitizer's wrapper of
  ``nn.Module.train``.

This costs a stack walk per eval-mode forward with grad enabled, taken once
per call site; training forwards (train mode) and validation forwards
(``no_grad``) never get here. torch is never imported here: callers pass
``nn.Module``.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import weakref
from dataclasses import dataclass, replace
from types import CodeType, FrameType
from typing import Any

from rnnfix.verify.records import Provenance, Site
from rnnfix.verify.sites import RawFrames, display_name, frame_kind, user_frames

#: Frames kept for a call chain and an eval site: deeper than a record's
#: default, so that the frame both came through is on both chains.
CHAIN_FRAMES = 16
#: Expressions kept per frame, and how deep containers are searched.
_MAX_REFS = 6
_MAX_ITEMS = 64
_CALL_IMPL = frozenset({"_call_impl", "_wrapped_call_impl"})
_MODULE_FILE = os.path.join("torch", "nn", "modules", "module.py")
_MISSING = object()


@dataclass
class EvalEntry:
    serial: int
    frames: RawFrames
    #: :attr:`ModeLog.eval_forwards` when ``eval()`` was called.
    eval_forwards: int


class ModeLog:
    """The last outermost ``eval()``/``train(False)`` per module, weakly held."""

    def __init__(self) -> None:
        self.entries: weakref.WeakKeyDictionary[Any, EvalEntry] = weakref.WeakKeyDictionary()
        self.serial = 0
        #: Eval-mode RNN forwards so far, with or without grad: evaluations.
        self.eval_forwards = 0

    def on_mode_call(self, module: Any, training: bool, frame: FrameType | None) -> None:
        if training:
            self.entries.pop(module, None)
            return
        # Past the module's own train()/eval() overrides: the site is the
        # user's ``model.eval()``, not ``super().train(mode)`` in the class.
        while (
            frame is not None
            and frame.f_code.co_name in ("train", "eval")
            and frame.f_locals.get("self") is module
        ):
            frame = frame.f_back
        self.serial += 1
        self.entries[module] = EvalEntry(
            self.serial, user_frames(frame, CHAIN_FRAMES), self.eval_forwards
        )

    def last_eval(self, rnn: Any) -> tuple[Any, EvalEntry] | None:
        """The latest ``eval()`` on ``rnn`` or a module holding it that is
        still in eval mode."""
        best: tuple[Any, EvalEntry] | None = None
        for module, entry in list(self.entries.items()):
            if module.training:
                continue
            if module is not rnn and all(m is not rnn for m in module.modules()):
                continue
            if best is None or entry.serial > best[1].serial:
                best = (module, entry)
        return best


def capture(
    start: FrameType | None,
    log: ModeLog,
    module_type: type,
    dropout: bool,
    cache: dict[tuple[object, ...], Provenance | None],
    site: RawFrames,
) -> Provenance | None:
    """The provenance of the RNN forward whose kernel ``start`` called; None
    when no module call is on the stack (a bare ``torch.lstm`` call).
    ``cache``: taken once per forward site (``site``) and ``eval()`` call."""
    called = _called_modules(start, module_type)
    if not called:
        return None
    rnn = called[0][0]
    model, caller, arguments = called[-1]
    # Any eval() since the last capture may change the answer; until then a
    # call site's provenance stands (one stack walk per forward, no search).
    key = (site, log.serial, id(model), id(rnn))
    if key in cache:
        return cache[key]
    found = log.last_eval(rnn)
    provenance = _provenance(found, rnn, model, caller, module_type, dropout, log)
    if _requires_grad(arguments):
        provenance = replace(provenance, input_grad=True)
    cache[key] = provenance
    return provenance


def _requires_grad(arguments: tuple[object, object]) -> bool:
    """A tensor among the call's arguments (one level into lists, tuples and
    dicts) requires grad."""
    args, kwargs = arguments
    values = [*(args if isinstance(args, tuple) else ())]
    values += list(kwargs.values()) if isinstance(kwargs, dict) else []
    items: list[object] = []
    for value in values:
        if isinstance(value, dict):
            items.extend(value.values())
        elif isinstance(value, (list, tuple)):
            items.extend(value)
        else:
            items.append(value)
    return any(getattr(item, "requires_grad", False) is True for item in items)


def _provenance(
    found: tuple[Any, EvalEntry] | None,
    rnn: Any,
    model: Any,
    caller: FrameType | None,
    module_type: type,
    dropout: bool,
    log: ModeLog,
) -> Provenance:
    eval_site: tuple[Site, ...] = ()
    eval_path = ""
    nothing_evaluated = False
    if found is not None:
        evaluated, entry = found
        eval_site = tuple(Site(f, line, fn) for f, line, fn in entry.frames)
        if evaluated is not model and any(m is evaluated for m in model.modules()):
            eval_path = _path_in(model, evaluated) or ""
        # This forward itself is already counted.
        nothing_evaluated = log.eval_forwards - 1 == entry.eval_forwards
    call, refs = _call_chain(caller, model, module_type)
    user_call = caller is not None and frame_kind(caller.f_code) == 0
    return Provenance(
        model=type(model).__name__,
        call=call,
        refs=refs,
        eval_site=eval_site,
        eval_path=eval_path,
        rnn_path="" if rnn is model else _path_in(model, rnn),
        rnn_dropout=dropout,
        user_call=user_call,
        nothing_evaluated=nothing_evaluated,
    )


def _called_modules(
    start: FrameType | None, module_type: type
) -> list[tuple[Any, FrameType | None, tuple[object, object]]]:
    """Modules being called on the stack, innermost first, each with the frame
    that called it (past torch's own ``__call__`` frames) and the call's
    ``(args, kwargs)``."""
    out: list[tuple[Any, FrameType | None, tuple[object, object]]] = []
    frame = start
    while frame is not None:
        code = frame.f_code
        if code.co_name in _CALL_IMPL and code.co_filename.endswith(_MODULE_FILE):
            local = frame.f_locals
            module = local.get("self")
            if isinstance(module, module_type):
                arguments = (local.get("args", ()), local.get("kwargs", {}))
                if out and out[-1][0] is module:
                    out[-1] = (module, frame.f_back, arguments)
                else:
                    out.append((module, frame.f_back, arguments))
        frame = frame.f_back
    return out


def _path_in(outer: Any, inner: Any) -> str | None:
    for name, module in outer.named_modules():
        if module is inner:
            return str(name)
    return None


def _call_chain(
    caller: FrameType | None, model: Any, module_type: type
) -> tuple[tuple[Site, ...], tuple[tuple[str, ...], ...]]:
    sites: list[Site] = []
    refs: list[tuple[str, ...]] = []
    frame = caller
    first = True
    while frame is not None and len(sites) < CHAIN_FRAMES:
        code = frame.f_code
        if frame_kind(code) == 0:
            sites.append(Site(display_name(code.co_filename), frame.f_lineno, code.co_name))
            refs.append(_refs(frame, model, module_type, first and frame is caller))
            first = False
        frame = frame.f_back
    return tuple(sites), tuple(refs)


def _refs(frame: FrameType, target: Any, module_type: type, call_frame: bool) -> tuple[str, ...]:
    """Expressions that name ``target`` in ``frame``: the called expression
    first (``models["tagger"]`` in ``models["tagger"](x)``), then names,
    attributes and container entries, shallowest first."""
    out: list[str] = []
    if call_frame:
        text = called_expression(frame)
        if text is not None and resolve(text, frame, module_type) is target:
            out.append(text)
    roots = list(frame.f_locals.items())
    code = frame.f_code
    local_names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    scope_globals = frame.f_globals
    for name in code.co_names:
        if name not in local_names and name in scope_globals and name not in frame.f_locals:
            roots.append((name, scope_globals[name]))
    level: list[tuple[str, Any]] = [(n, v) for n, v in roots if n.isidentifier()]
    for _depth in range(3):
        following: list[tuple[str, Any]] = []
        for text, value in level:
            if value is target and text not in out:
                out.append(text)
                if len(out) >= _MAX_REFS:
                    return tuple(out)
            elif not isinstance(value, (str, bytes, int, float, type(None))):
                following.extend(_children(text, value, module_type))
        level = following[: _MAX_ITEMS * 4]
    return tuple(out)


def _children(text: str, value: Any, module_type: type) -> list[tuple[str, Any]]:
    """Sub-objects reachable without running user code: instance attributes,
    submodules, dict / ModuleDict / list / ModuleList entries."""
    out: list[tuple[str, Any]] = []
    if isinstance(value, module_type):
        modules = vars(value).get("_modules", {})
        if type(value).__name__ == "ModuleDict":
            out.extend((f"{text}[{json.dumps(k)}]", v) for k, v in list(modules.items()))
        elif type(value).__name__ in ("ModuleList", "Sequential"):
            out.extend((f"{text}[{i}]", v) for i, v in enumerate(list(modules.values())))
        else:
            out.extend((f"{text}.{k}", v) for k, v in list(modules.items()) if k.isidentifier())
        attrs = vars(value)
        out.extend(
            (f"{text}.{k}", v)
            for k, v in list(attrs.items())[:_MAX_ITEMS]
            if k.isidentifier() and not k.startswith("_")
        )
        return out
    if type(value) is dict:
        for k, v in list(value.items())[:_MAX_ITEMS]:
            if isinstance(k, str) or (isinstance(k, int) and not isinstance(k, bool)):
                out.append((f"{text}[{json.dumps(k)}]", v))
        return out
    if type(value) in (list, tuple):
        return [(f"{text}[{i}]", v) for i, v in enumerate(value[:_MAX_ITEMS])]
    try:
        attrs = vars(value)
    except TypeError:
        return out
    if isinstance(attrs, dict) and not isinstance(value, type):
        out.extend(
            (f"{text}.{k}", v)
            for k, v in list(attrs.items())[:_MAX_ITEMS]
            if isinstance(k, str) and k.isidentifier() and not k.startswith("__")
        )
    return out


def called_expression(frame: FrameType) -> str | None:
    """The callee of the call ``frame`` is executing, as written
    (``self.models["enc"]``), from the instruction's source position."""
    code = frame.f_code
    position = _position(code, frame.f_lasti)
    if position is None:
        return None
    line, end_line, col, end_col = position
    lines = linecache.getlines(code.co_filename)
    if not lines or end_line > len(lines):
        return None
    chunk = [s.encode("utf-8") for s in lines[line - 1 : end_line]]
    if len(chunk) == 1:
        raw = chunk[0][col:end_col]
    else:
        raw = chunk[0][col:] + b"".join(chunk[1:-1]) + chunk[-1][:end_col]
    text = "(" + raw.decode("utf-8", "replace") + "\n)"
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    call = tree.body
    if not isinstance(call, ast.Call):
        return None
    segment = ast.get_source_segment(text, call.func)
    if not segment or "\n" in segment:
        return None
    return segment


def _position(code: CodeType, lasti: int) -> tuple[int, int, int, int] | None:
    if lasti < 0:
        return None
    try:
        positions = list(code.co_positions())
    except AttributeError:  # Python < 3.11
        return None
    index = lasti // 2
    if index >= len(positions):
        return None
    line, end_line, col, end_col = positions[index]
    if line is None or end_line is None or col is None or end_col is None:
        return None
    return line, end_line, col, end_col


def resolve(text: str, frame: FrameType, module_type: type) -> Any:
    """The object ``text`` (a name, attributes, constant subscripts) names in
    ``frame``, read without running user code; a sentinel when unknown."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return _MISSING
    return _resolve(node, frame, module_type)


def _resolve(node: ast.expr, frame: FrameType, module_type: type) -> Any:
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals):
            if node.id in scope:
                return scope[node.id]
        return _MISSING
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, frame, module_type)
        if base is _MISSING:
            return _MISSING
        try:
            attrs = vars(base)
        except TypeError:
            return _MISSING
        if node.attr in attrs:
            return attrs[node.attr]
        if isinstance(base, module_type):
            for table in ("_modules", "_parameters", "_buffers"):
                entries = attrs.get(table) or {}
                if node.attr in entries:
                    return entries[node.attr]
        return _MISSING
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _resolve(node.value, frame, module_type)
        key = node.slice.value
        if type(base) is dict:
            return base.get(key, _MISSING)
        if type(base) in (list, tuple) and isinstance(key, int):
            return base[key] if -len(base) <= key < len(base) else _MISSING
        if isinstance(base, module_type):
            modules = vars(base).get("_modules", {})
            if type(base).__name__ == "ModuleDict":
                return modules.get(key, _MISSING)
            if type(base).__name__ in ("ModuleList", "Sequential") and isinstance(key, int):
                values = list(modules.values())
                return values[key] if -len(values) <= key < len(values) else _MISSING
        return _MISSING
    return _MISSING
