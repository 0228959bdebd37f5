"""``verify --fix``: turn what the run recorded into source edits.

A cuDNN record (a backward reached an RNN whose forward ran in eval mode)
carries its :class:`~rnnfix.verify.records.Provenance`: the user frames from
the call of the model outwards, the expressions naming the model in each, and
the user frames of the ``eval()`` that put it in eval mode. The edit comes
from the static machinery, as ``rnnfix apply`` would place it:

- the *origin* is the statement that led to the ``eval()`` and the *step* the
  statement that led to the forward, both in the innermost frame the two
  chains share (the same function); ``rnnfix.analysis.modes.placement.anchor_for``
  (RNF001's placement) then gives the statement ``train()`` goes before: the
  head of the innermost loop carrying the eval mode round to the forward,
  the training loop or call right after an evaluation, never between the
  forward and its backward. When the eval mode comes from an earlier call of
  the function itself, ``train()`` goes at the function's start;
- the receiver is an expression the run saw naming the model in that frame,
  kept only when every binding of its first name comes before the anchor;
- a gradient meant to run in eval mode (no optimizer updates the RNN; or an
  ``eval()`` followed by training with nothing evaluated, frozen-BatchNorm
  fine-tuning) is RNF004's case: with ``--rnn-only``, the RNN alone goes to
  train mode before the forward when its dropout cannot change the result
  (``cudnn-off``: the forward and the backward run inside
  ``torch.backends.cudnn.flags(enabled=False)``); otherwise it is reported.

Nothing here imports torch. A record whose call or eval site is in library
code, a lambda or generated code, or that names no model the edit can reach,
is reported with its stack, not fixed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.modes.placement import anchor_for, function_head, statement_path
from rnnfix.analysis.syntax.scopes import LOOPS, FuncNode
from rnnfix.analysis.syntax.walks import walk_local
from rnnfix.config.settings import Settings
from rnnfix.rules.rnf004_backward_in_eval_through_rnn import (
    _common_block,
    alone_on_lines,
    cudnn_off_wrap,
)
from rnnfix.source.edits import Edit, InsertStatements
from rnnfix.source.files import FileProblem, read_source
from rnnfix.verify.records import CUDNN_BACKWARD_IN_EVAL, Provenance, Record, Site, format_chain

#: Frames whose code is not a block of statements: nothing can be inserted there.
_NOT_STATEMENTS = frozenset({"<lambda>", "<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"})
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass
class PlannedFix:
    """One edit (or one group of edits of the same statement) in one file."""

    path: Path
    edits: tuple[Edit, ...]
    #: ``rnf001`` (train() before the training forward), ``rnn-train`` or
    #: ``cudnn-off`` (RNF004's strategies).
    strategy: str
    description: str
    line: int
    records: list[Record] = field(default_factory=list)

    def key(self) -> tuple[object, ...]:
        return (str(self.path), self.edits)


@dataclass
class Unfixed:
    record: Record
    reason: str


@dataclass
class Plan:
    fixes: list[PlannedFix] = field(default_factory=list)
    unfixed: list[Unfixed] = field(default_factory=list)


@dataclass
class _Source:
    path: Path
    ctx: FileContext


class Planner:
    def __init__(self, cwd: Path, settings: Settings) -> None:
        self.cwd = cwd
        self.settings = settings
        self._sources: dict[Path, _Source | str] = {}

    def plan(self, records: Sequence[Record]) -> Plan:
        plan = Plan()
        seen: dict[tuple[object, ...], PlannedFix] = {}
        for record in records:
            if record.kind != CUDNN_BACKWARD_IN_EVAL:
                continue
            found = self._plan_one(record)
            if isinstance(found, str):
                plan.unfixed.append(Unfixed(record, found))
                continue
            twin = seen.get(found.key())
            if twin is not None:
                twin.records.append(record)
                continue
            seen[found.key()] = found
            plan.fixes.append(found)
        return plan

    def source(self, file: str) -> _Source | str:
        path = (self.cwd / file).resolve()
        known = self._sources.get(path)
        if known is not None:
            return known
        try:
            _data, decoded = read_source(path)
            tree = ast.parse(decoded.text)
        except FileProblem as exc:
            found: _Source | str = f"{file}: {exc}"
        except (SyntaxError, ValueError) as exc:
            found = f"{file}: does not parse ({exc})"
        else:
            ctx = FileContext(decoded.text, tree, self.settings, str(path))
            found = _Source(path, ctx)
        self._sources[path] = found
        return found

    # --- one record --------------------------------------------------------
    def _plan_one(self, record: Record) -> PlannedFix | str:
        prov = record.provenance
        if prov is None:
            return "the forward was not seen through a module call"
        if not prov.call:
            return "no frame of user code called the model"
        if not prov.user_call:
            return (
                "code rnnfix cannot edit (a library, generated code) calls the model; "
                f"user code around it: {format_chain(prov.call)}"
            )
        if not prov.eval_site:
            return (
                f"no eval()/train(False) call put {prov.model} in eval mode while the run "
                "watched (its training flag was set another way)"
            )
        deliberate = self._deliberate(record, prov)
        if deliberate is not None:
            if not record.optimizers and not prov.input_grad:
                return f"{deliberate}: not fixed"
            if not self.settings.rnn_only:
                return f"{deliberate}: RNF004's case, fixed only with --rnn-only"
            if self.settings.rnn_only_strategy == "cudnn-off":
                return self._cudnn_off(record, prov)
            return self._rnn_train(record, prov)
        return self._train_before(record, prov)

    def _deliberate(self, record: Record, prov: Provenance) -> str | None:
        """Why the eval-mode gradient looks deliberate, or None for a training bug."""
        if not record.optimizers:
            if prov.input_grad:
                return (
                    "no optimizer updates this RNN and the gradient is taken with respect to "
                    "the model's input: a gradient meant to run in eval mode"
                )
            return (
                "no optimizer updates this RNN and nothing shows the gradient is meant for "
                "eval mode either"
            )
        if prov.nothing_evaluated and self._same_iteration(prov):
            return (
                "eval() is followed by training with nothing evaluated in between: "
                "frozen-BatchNorm fine-tuning"
            )
        return None

    def _same_iteration(self, prov: Provenance) -> bool:
        """The ``eval()`` precedes the forward in the same function call and
        the same loop iteration."""
        site, origin_site = prov.call[0], prov.eval_site[-1]
        for eval_frame in prov.eval_site:
            if eval_frame.file == site.file and eval_frame.function == site.function:
                origin_site = eval_frame
                break
        else:
            return False
        found = self._locate(site, origin_site)
        if isinstance(found, str):
            return False
        src, scope, step, origin = found
        if origin.lineno >= step.lineno:
            return False
        scope_node: ast.AST = scope if scope is not None else src.ctx.tree
        parents = src.ctx.facts.parents
        po = statement_path(origin, scope_node, parents) or []
        ps = statement_path(step, scope_node, parents) or []
        i = 0
        while i < min(len(po), len(ps)) and po[i] is ps[i]:
            i += 1
        return not any(isinstance(s, LOOPS) for s in po[i:])

    def _locate(
        self, site: Site, origin_site: Site
    ) -> tuple[_Source, FuncNode | None, ast.stmt, ast.stmt] | str:
        src = self.source(site.file)
        if isinstance(src, str):
            return src
        found, scope = _scope(src.ctx.tree, site)
        if not found:
            return f"{site}: no function `{site.function}` there"
        step = _statement_at(src.ctx, scope, site.line)
        origin = _statement_at(src.ctx, scope, origin_site.line)
        if step is None or origin is None:
            return f"{site}: no statement at that line"
        return src, scope, step, origin

    def _train_before(self, record: Record, prov: Provenance) -> PlannedFix | str:
        """RNF001's edit: ``<model>.train()`` where placement puts it."""
        fallback: tuple[int, Site] | None = None
        reason = "no frame is common to the forward's and the eval() call's chains"
        for i, site in enumerate(prov.call):
            if site.function in _NOT_STATEMENTS:
                continue
            match = next(
                (e for e in prov.eval_site if e.file == site.file and e.function == site.function),
                None,
            )
            if match is None:
                continue
            if fallback is None and site.function != "<module>":
                fallback = (i, site)
            found = self._locate(site, match)
            if isinstance(found, str):
                reason = found
                continue
            src, scope, step, origin = found
            if origin is step:
                continue  # one statement leads to both: look further out
            anchor = anchor_for(origin, step, scope, src.ctx.tree, src.ctx.facts.parents, [step])
            if anchor is None:
                continue
            return self._insert_train(record, prov, i, src, scope, anchor)
        if fallback is not None:
            # The eval mode comes from an earlier call of this function
            # (``run_epoch`` evaluates at its end): train() at its start.
            i, site = fallback
            head_src = self.source(site.file)
            if isinstance(head_src, str):
                return head_src
            _found, head = _scope(head_src.ctx.tree, site)
            if head is not None:
                return self._insert_train(record, prov, i, head_src, head, function_head(head))
        return reason

    def _insert_train(
        self,
        record: Record,
        prov: Provenance,
        frame: int,
        src: _Source,
        scope: FuncNode | None,
        anchor: ast.stmt,
    ) -> PlannedFix | str:
        where = f"{src.ctx.path}:{anchor.lineno}"
        if not _anchorable(src.ctx, anchor):
            return f"{where}: the statement does not start its own line"
        refs = prov.refs[frame] if frame < len(prov.refs) else ()
        expr = _receiver(refs, scope, src.ctx, anchor)
        if expr is None:
            return (
                f"{where}: no expression naming {prov.model} there is bound before that "
                f"statement (seen: {', '.join(refs) or 'none'})"
            )
        target = _member(expr, prov.eval_path)
        code = f"{target}.train()"
        if _previous_is(src.ctx, anchor, code):
            return f"{where}: `{code}` is already there and did not hold"
        edit = InsertStatements(src.ctx.pos(anchor), (code,), "before")
        return PlannedFix(
            src.path,
            (edit,),
            "rnf001",
            f"insert `{code}` {_where(src.ctx, anchor)}",
            anchor.lineno,
            [record],
        )

    def _rnn_train(self, record: Record, prov: Provenance) -> PlannedFix | str:
        """RNF004 ``rnn-train``: the RNN alone in train mode before the forward."""
        if prov.rnn_dropout:
            return (
                "the RNN has inter-layer dropout (dropout > 0, more than one layer): train "
                "mode would change the gradient; use --rnn-only-strategy cudnn-off"
            )
        if prov.rnn_path is None:
            return f"the RNN is not a submodule of {prov.model}"
        site = prov.call[0]
        found = self._locate(site, site)
        if isinstance(found, str):
            return found
        src, scope, step, _ = found
        if not _anchorable(src.ctx, step) or isinstance(step, (ast.If, *LOOPS, ast.With)):
            return f"{site}: the forward is not a simple statement"
        expr = _receiver(prov.refs[0] if prov.refs else (), scope, src.ctx, step)
        if expr is None:
            return f"{site}: no expression naming {prov.model} is bound there"
        code = f"{_member(expr, prov.rnn_path)}.train()"
        if _previous_is(src.ctx, step, code):
            return f"{site}: `{code}` is already there and did not hold"
        edit = InsertStatements(src.ctx.pos(step), (code,), "before")
        return PlannedFix(
            src.path,
            (edit,),
            "rnn-train",
            f"insert `{code}` before line {step.lineno}: the RNN alone in train mode, "
            "the rest of the model stays in eval",
            step.lineno,
            [record],
        )

    def _cudnn_off(self, record: Record, prov: Provenance) -> PlannedFix | str:
        """RNF004 ``cudnn-off``: forward and backward inside ``cudnn.flags(enabled=False)``."""
        for site in prov.call:
            back = next(
                (b for b in record.backward if b.file == site.file and b.function == site.function),
                None,
            )
            if back is None:
                continue
            found = self._locate(site, back)
            if isinstance(found, str):
                return found
            src, _scope, step, backward = found
            analysis = src.ctx.facts.evalgrad
            span = _common_block(analysis, [step, backward])
            if span is None or not alone_on_lines(analysis, span[0], span[1]):
                return f"{site}: the forward and the backward are not in one block"
            first, last = span
            edits = cudnn_off_wrap(src.ctx, first, last)
            return PlannedFix(
                src.path,
                edits,
                "cudnn-off",
                f"run lines {first.lineno}-{last.end_lineno} with cuDNN off",
                first.lineno,
                [record],
            )
        return "the forward and the backward share no frame"


# --- syntax helpers ---------------------------------------------------------


def _receiver(
    refs: Sequence[str], scope: FuncNode | None, ctx: FileContext, anchor: ast.stmt
) -> str | None:
    """The first expression naming the model that is bound at ``anchor``."""
    for expr in refs:
        if _bound_before(expr, scope, ctx.tree, anchor, ctx.facts.parents):
            return expr
    return None


def _scope(tree: ast.Module, site: Site) -> tuple[bool, FuncNode | None]:
    """Whether ``site``'s scope was found, and it: the innermost function
    named ``site.function`` around ``site.line``, None for module level."""
    if site.function == "<module>":
        return True, None
    best: FuncNode | None = None
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == site.function
            and _start(node) <= site.line <= (node.end_lineno or node.lineno)
            and (best is None or node.lineno > best.lineno)
        ):
            best = node
    return best is not None, best


def _start(node: FuncNode) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _statement_at(ctx: FileContext, scope: FuncNode | None, line: int) -> ast.stmt | None:
    """The innermost statement of ``scope`` (not of a nested function) whose
    lines hold ``line``."""
    root: ast.AST = scope if scope is not None else ctx.tree
    best: ast.stmt | None = None
    for node in walk_local(root):
        if (
            isinstance(node, ast.stmt)
            and node is not root
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            if best is None or _inside(node, best, ctx):
                best = node
    return best


def _inside(node: ast.stmt, other: ast.stmt, ctx: FileContext) -> bool:
    parents = ctx.facts.parents
    cur: ast.AST | None = parents.get(node)
    while cur is not None:
        if cur is other:
            return True
        cur = parents.get(cur)
    return False


def _anchorable(ctx: FileContext, stmt: ast.stmt) -> bool:
    """A statement can get one inserted before it only when it starts its
    own line and has no decorators (RNF001's rule)."""
    pos = ctx.pos(stmt)
    line = ctx.lines[pos.line - 1] if pos.line - 1 < len(ctx.lines) else ""
    return not line[: pos.col].strip() and not getattr(stmt, "decorator_list", None)


def _previous_is(ctx: FileContext, anchor: ast.stmt, code: str) -> bool:
    parent = ctx.facts.parents.get(anchor)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is anchor for s in block):
            i = next(k for k, s in enumerate(block) if s is anchor)
            return i > 0 and ast.unparse(block[i - 1]).replace("'", '"') == code.replace("'", '"')
    return False


def _member(expr: str, path: str | None) -> str:
    """``expr`` followed by a submodule path (``layers.0.rnn`` ->
    ``[0]``-indexed as ``nn.Sequential``/``ModuleList`` allow)."""
    out = expr
    for part in (path or "").split("."):
        if not part:
            continue
        if part.isdigit():
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += f'["{part}"]'
    return out


def _bound_before(
    expr: str,
    scope: FuncNode | None,
    tree: ast.Module,
    anchor: ast.stmt,
    parents: dict[ast.AST, ast.AST],
) -> bool:
    """``expr``'s first name holds what the run saw when the inserted line
    runs: a parameter, a global the scope never binds, or a name bound before
    ``anchor`` and not rebound later in a loop that repeats ``anchor``."""
    match = _NAME.match(expr)
    if match is None:
        return False
    name = match.group(0)
    root: ast.AST = scope if scope is not None else tree
    if isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = root.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        if any(a.arg == name for a in params):
            return True
    loops = [n for n in _ancestors(anchor, parents, root) if isinstance(n, LOOPS)]
    before = after = False
    for node in walk_local(root):
        if node is root or not _binds(node, name):
            continue
        where = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if where < (anchor.lineno, anchor.col_offset):
            before = True
        elif any(loop in _ancestors(node, parents, root) for loop in loops):
            return False  # rebound later in an iteration that the inserted line repeats
        else:
            after = True
    if before:
        return True
    # Never bound in a function: a global (or closure) name, as the run saw it.
    return not after and isinstance(root, (ast.FunctionDef, ast.AsyncFunctionDef))


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    return False


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST], root: ast.AST) -> list[ast.AST]:
    out = []
    cur = parents.get(node)
    while cur is not None and cur is not root:
        out.append(cur)
        cur = parents.get(cur)
    return out


def _where(ctx: FileContext, anchor: ast.stmt) -> str:
    parent = ctx.facts.parents.get(anchor)
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
        function_head(parent) is anchor
    ):
        return f"at the start of `{parent.name}`"
    if isinstance(parent, LOOPS) and parent.body[0] is anchor:
        return f"at the head of the loop on line {parent.lineno}"
    return f"before line {anchor.lineno}"
