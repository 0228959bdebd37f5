"""The libcst transformer that applies ``rnnfix.source.edits``: only files with an
edit to apply are parsed by libcst, whose round trip keeps every byte we do
not touch. Import it lazily (inside the function that applies edits): libcst
costs about 0.35 s to import, and most runs have nothing to rewrite."""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from rnnfix.source.edits import (
    AddDecorator,
    AddImport,
    Edit,
    EditError,
    InsertStatements,
    Pos,
    RemoveStatement,
    ReplaceExpression,
    WrapInWith,
)
from rnnfix.source.lines import endings_kept
from rnnfix.source.span import Span, edit_span, shift

_DEFAULT_INDENT = "    "  # libcst's, when no line is indented


def apply_edits(source: str, edits: Sequence[Edit], tree: ast.Module | None = None) -> str:
    """Apply ``edits`` to ``source`` and return the new source.

    Raises ``EditError`` when an edit's anchor is not found, or
    ``libcst.ParserSyntaxError`` when ``source`` does not parse. ``tree``:
    ``source``'s ``ast``, when the caller has it; libcst then sees only the
    top-level statements the edits touch (``rnnfix.source.span``), with the
    same result byte for byte, and the whole file on any doubt or failure.
    """
    span = edit_span(source, tree, edits) if tree is not None else None
    if span is not None:
        try:
            new = _apply_snippet(source[span.start : span.end], shift(edits, span.first - 1), span)
        except Exception:  # noqa: BLE001 - the whole file says what went wrong
            new = None
        if new is not None:
            return endings_kept(source, source[: span.start] + new + source[span.end :])
    module = cst.parse_module(source)
    if module.code != source:
        # libcst does not round-trip every file (a form feed in indentation,
        # CR-only newlines): rewriting would change bytes nobody asked for.
        raise EditError(
            "the file cannot be rewritten byte for byte (form feed or CR-only newlines)"
        )
    return endings_kept(source, _transform(module, edits).code)


def _apply_snippet(snippet: str, edits: Sequence[Edit], span: Span) -> str | None:
    """The snippet with ``edits``, or None when libcst reads it otherwise
    than as part of the file: it does not round-trip, or its indentation
    unit (libcst's first INDENT) is not the file's."""
    module = cst.parse_module(snippet)
    if module.code != snippet or module.default_indent != (span.indent or _DEFAULT_INDENT):
        return None
    return _transform(module, edits).code


def _transform(module: cst.Module, edits: Sequence[Edit]) -> cst.Module:
    located = [e for e in edits if not isinstance(e, AddImport)]
    imports = [e for e in edits if isinstance(e, AddImport)]
    if located:
        transformer = _EditTransformer(located)
        module = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
        missing = transformer.unapplied()
        if missing:
            raise EditError(f"could not locate edit target(s): {missing}")
    if imports:
        module = _add_imports(module, imports)
    return module


def _add_imports(module: cst.Module, imports: Sequence[AddImport]) -> cst.Module:
    """Each import once, with the file's other imports of the same package (else
    after its last top-level import, else after the docstring and
    ``__future__`` imports): never above set-up code such as
    ``os.environ["CUDA_VISIBLE_DEVICES"] = ...`` that precedes them."""
    body = list(module.body)
    for imp in dict.fromkeys(imports):
        if any(_binds(stmt, imp) for stmt in body):
            continue
        text = (
            f"import {imp.module}" if imp.name is None else f"from {imp.module} import {imp.name}"
        ) + (f" as {imp.asname}" if imp.asname else "")
        stmt = cst.parse_statement(text + "\n")
        root = imp.module.split(".")[0]
        same = [i for i, s in enumerate(body) if root in _imported_packages(s)]
        any_import = [i for i, s in enumerate(body) if _imported_packages(s)]
        if same or any_import:
            at = (same or any_import)[-1] + 1
        else:
            at = 0
            while at < len(body) and (_is_docstring(body[at]) or _is_future(body[at])):
                at += 1
            if at < len(body):
                # The file's first import: set the code after it apart as a
                # formatter would (two blank lines before a def or a class).
                body[at] = _set_apart(body[at])
        body.insert(at, stmt)
    return module.with_changes(body=body)


def _set_apart(
    stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement,
) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
    """``stmt`` with the blank lines PEP 8 puts after an import block (two
    before a definition, one before other code) when it has none."""
    if stmt.leading_lines:
        return stmt
    lines = 2 if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else 1
    return stmt.with_changes(leading_lines=[cst.EmptyLine()] * lines)


def _import_nodes(stmt: cst.CSTNode) -> list[cst.Import | cst.ImportFrom]:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    return [s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom))]


def _imported_packages(stmt: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    for node in _import_nodes(stmt):
        if isinstance(node, cst.Import):
            for alias in node.names:
                out.add(cst.Module([]).code_for_node(alias.name).split(".")[0])
        elif node.module is not None and not node.relative:
            text = cst.Module([]).code_for_node(node.module)
            if text != "__future__":
                out.add(text.split(".")[0])
            else:
                out.add("")  # counts as an import, of no package
    return out


def _binds(stmt: cst.CSTNode, imp: AddImport) -> bool:
    code = cst.Module([]).code_for_node
    for node in _import_nodes(stmt):
        if isinstance(node, cst.Import) and imp.name is None:
            for alias in node.names:
                bound = code(alias.asname.name) if alias.asname else None
                if code(alias.name) == imp.module and bound == imp.asname:
                    return True
        elif (
            isinstance(node, cst.ImportFrom)
            and imp.name is not None
            and node.module is not None
            and not node.relative
            and code(node.module) == imp.module
            and not isinstance(node.names, cst.ImportStar)
        ):
            for alias in node.names:
                bound = code(alias.asname.name) if alias.asname else None
                if code(alias.name) == imp.name and bound == imp.asname:
                    return True
    return False


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_future(stmt: cst.CSTNode) -> bool:
    return any(
        isinstance(n, cst.ImportFrom)
        and n.module is not None
        and cst.Module([]).code_for_node(n.module) == "__future__"
        for n in _import_nodes(stmt)
    )


class _EditTransformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, edits: Sequence[Edit]) -> None:
        super().__init__()
        self._before: dict[Pos, list[str]] = {}
        self._after: dict[Pos, list[str]] = {}
        self._wraps: dict[Pos, WrapInWith] = {}
        self._replace: dict[tuple[Pos, Pos], str] = {}
        self._decorate: dict[Pos, list[str]] = {}
        self._remove: set[Pos] = set()
        self._done: set[Edit] = set()
        self._edits = list(dict.fromkeys(edits))  # dedupe, keep order
        for e in self._edits:
            if isinstance(e, InsertStatements):
                target = self._before if e.where == "before" else self._after
                target.setdefault(e.anchor, []).extend(e.code)
            elif isinstance(e, WrapInWith):
                if e.first in self._wraps:
                    raise EditError(f"two wraps start at {e.first}")
                self._wraps[e.first] = e
            elif isinstance(e, ReplaceExpression):
                self._replace[(e.start, e.end)] = e.code
            elif isinstance(e, AddDecorator):
                self._decorate.setdefault(e.function, []).append(e.decorator)
            elif isinstance(e, RemoveStatement):
                self._remove.add(e.anchor)

        # Where the edits are: a node whose range holds none of them is not
        # descended into (its subtree comes back as it was, unvisited).
        self._at = sorted({p for e in self._edits for p in _positions(e)})

    def on_visit(self, node: cst.CSTNode) -> bool:
        r = self.get_metadata(PositionProvider, node, None)
        if r is None or isinstance(node, cst.Module):
            return True
        start, end = Pos(r.start.line, r.start.column), Pos(r.end.line, r.end.column)
        i = bisect.bisect_left(self._at, start)
        return i < len(self._at) and self._at[i] <= end

    def unapplied(self) -> list[Edit]:
        return [e for e in self._edits if e not in self._done]

    def _start(self, node: cst.CSTNode) -> Pos:
        r = self.get_metadata(PositionProvider, node)
        return Pos(r.start.line, r.start.column)

    def _mark(self, pred: Callable[[Edit], bool]) -> None:
        for e in self._edits:
            if pred(e):
                self._done.add(e)

    def _mark_insert(self, anchor: Pos, where: str) -> None:
        self._mark(
            lambda e: isinstance(e, InsertStatements) and e.anchor == anchor and e.where == where
        )

    # --- expressions -----------------------------------------------------
    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode:
        if self._replace and isinstance(original_node, cst.BaseExpression):
            r = self.get_metadata(PositionProvider, original_node)
            key = (Pos(r.start.line, r.start.column), Pos(r.end.line, r.end.column))
            code = self._replace.get(key)
            if code is not None:
                del self._replace[key]
                self._mark(lambda e: isinstance(e, ReplaceExpression) and (e.start, e.end) == key)
                new = cst.parse_expression(code)
                if isinstance(updated_node, cst.BaseExpression):
                    new = new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)
                return new
        if isinstance(updated_node, cst.FunctionDef) and self._decorate:
            pos = self._start(original_node)
            decorators = self._decorate.pop(pos, None)
            if decorators:
                self._mark(lambda e: isinstance(e, AddDecorator) and e.function == pos)
                added = [cst.Decorator(decorator=cst.parse_expression(d)) for d in decorators]
                updated_node = updated_node.with_changes(
                    decorators=[*updated_node.decorators, *added]
                )
        if isinstance(updated_node, (cst.Module, cst.IndentedBlock)):
            return self._rewrite_body(original_node, updated_node)
        return updated_node

    # --- statement lists -------------------------------------------------
    def _rewrite_body(
        self, original: cst.CSTNode, updated: cst.Module | cst.IndentedBlock
    ) -> cst.CSTNode:
        orig_body = original.body  # type: ignore[attr-defined]
        new_body: list[cst.BaseStatement] = []
        changed = False
        i = 0
        n = len(orig_body)
        carried: Sequence[cst.EmptyLine] = ()
        while i < n:
            pos = self._start(orig_body[i])
            current = updated.body[i]
            if carried:
                current = current.with_changes(
                    leading_lines=[*carried, *getattr(current, "leading_lines", ())]
                )
                carried = ()
            if pos in self._remove:
                self._remove.discard(pos)
                self._done.add(RemoveStatement(pos))
                changed = True
                # Comments above it survive on the next statement; bare blank
                # lines do not (the next statement keeps its own spacing).
                leading = getattr(current, "leading_lines", ())
                carried = leading if any(line.comment for line in leading) else ()
                i += 1
                continue
            before = self._before.pop(pos, None)
            if before:
                changed = True
                self._mark_insert(pos, "before")
                inserted = _parse_statements(before)
                # Blank lines and comments above the anchor introduce it and
                # what is inserted for it: they move above the inserted code.
                leading = getattr(current, "leading_lines", ())
                if leading:
                    inserted[0] = inserted[0].with_changes(leading_lines=leading)
                    current = current.with_changes(leading_lines=())
                new_body.extend(inserted)
            wrap = self._wraps.pop(pos, None)
            if wrap is not None:
                j = i
                while j < n and self._start(orig_body[j]) != wrap.last:
                    j += 1
                if j == n:
                    raise EditError(f"wrap end {wrap.last} is not in the block of {wrap.first}")
                changed = True
                self._done.add(wrap)
                inner = [current, *updated.body[i + 1 : j + 1]]
                # Comments and blank lines above the first wrapped statement stay
                # above the new ``with`` header.
                first = inner[0]
                leading = getattr(first, "leading_lines", ())
                inner[0] = first.with_changes(leading_lines=())
                header = cst.parse_statement(f"with {wrap.items}:\n    pass\n")
                assert isinstance(header, cst.With)
                # One indentation step of the enclosing block, not the file's
                # first indent (a file may mix tab- and space-indented code).
                step = updated.indent if isinstance(updated, cst.IndentedBlock) else None
                block = cst.IndentedBlock(body=inner, indent=step)
                new_body.append(header.with_changes(body=block, leading_lines=leading))
                last_pos = self._start(orig_body[j])
                i = j
            else:
                new_body.append(current)
                last_pos = pos
            after = self._after.pop(last_pos, None)
            if after:
                changed = True
                self._mark_insert(last_pos, "after")
                new_body.extend(_parse_statements(after))
            i += 1
        if not changed:
            return updated
        if not new_body and isinstance(updated, cst.IndentedBlock):
            new_body.append(cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carried))
        elif carried:  # the removed statement was the last: keep its comments
            return updated.with_changes(body=new_body, footer=[*carried, *updated.footer])
        return updated.with_changes(body=new_body)


def _positions(e: Edit) -> tuple[Pos, ...]:
    if isinstance(e, (InsertStatements, RemoveStatement)):
        return (e.anchor,)
    if isinstance(e, WrapInWith):
        return (e.first, e.last)
    if isinstance(e, ReplaceExpression):
        return (e.start, e.end)
    if isinstance(e, AddDecorator):
        return (e.function,)
    return ()


def _parse_statements(code: Sequence[str]) -> list[cst.BaseStatement]:
    return [cst.parse_statement(line + "\n") for line in code]
