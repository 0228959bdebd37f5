"""Test code that rnnfix leaves alone unless ``include-tests`` is set:
``unittest.TestCase`` subclasses inside any file, ``test_*``/``_test_*``
functions that assert, and ``__main__`` self-checks that assert (test files
found in folders are not discovered at all, see ``rnnfix.source.files``).

A test asserts what the code does as written: a helper of a ``TestCase``
(``_evaluate``, ``forward_eval_helper``) that gets ``@torch.no_grad()`` or an
``eval()`` breaks the assertions of the tests that call it, and fixes nothing
a user runs.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import walk_statements

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext, Finding
    from rnnfix.analysis.project.view import ProjectView
    from rnnfix.analysis.syntax.imports import ImportMap

# unittest.TestCase, IsolatedAsyncioTestCase, absltest.TestCase, torch's
# common_utils.TestCase, django's TestCase, a project's BaseTestCase...
_SUFFIX = "TestCase"


def test_case_classes(
    tree: ast.Module, imports: ImportMap | None = None, project: ProjectView | None = None
) -> list[ast.ClassDef]:
    """Classes whose bases include a ``TestCase``: by name (also through an
    import alias), through a test class of the same file, or through one of
    another file of the run (the project index); and ``Test*`` classes with
    ``test_*`` methods."""
    classes = [n for n in walk_statements(tree) if isinstance(n, ast.ClassDef)]
    found: dict[str, ast.ClassDef] = {}
    changed = True
    while changed:  # a test class may derive from one defined below it
        changed = False
        for cls in classes:
            if cls.name in found and found[cls.name] is cls:
                continue
            if _collected(cls) or any(_is_test_base(b, found, imports, project) for b in cls.bases):
                found[cls.name] = cls
                changed = True
    return list(found.values())


def _collected(cls: ast.ClassDef) -> bool:
    """A ``Test*`` class with ``test_*`` methods: pytest collects it, and so
    does unittest when a base it derives from (unresolved here) is a TestCase.
    Not an ``nn.Module`` (``TestTimeAugmentation(nn.Module)`` is model code)."""
    if not cls.name.startswith("Test"):
        return False
    if any((dotted(b) or "").endswith("Module") for b in cls.bases):
        return False
    return any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name.startswith("test_")
        for s in cls.body
    )


def _is_test_base(
    base: ast.expr,
    local: dict[str, ast.ClassDef],
    imports: ImportMap | None,
    project: ProjectView | None,
) -> bool:
    text = dotted(base)
    if text is None:
        return False
    if text.rsplit(".", 1)[-1].endswith(_SUFFIX):
        return True
    qualname = imports.qualname(base) if imports is not None else None
    if qualname is not None and qualname.rsplit(".", 1)[-1].endswith(_SUFFIX):
        return True
    if text in local:
        return True
    if project is not None:
        found = project.lookup_class(base)
        return found is not None and found.is_test
    return False


def test_function_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """Test code outside ``TestCase`` classes, in library files too (issue
    27): a ``test_*``/``_test_*`` function that asserts (``assert``,
    ``self.assertEqual``, ``torch.testing.assert_close``), and an ``if
    __name__ == "__main__":`` block that asserts and trains nothing (a
    module's self-check). An ``eval()`` or ``no_grad`` there changes what the
    assertions check; nothing a user runs gets fixed."""
    spans: list[tuple[int, int]] = []
    for node in walk_statements(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith(("test_", "_test_")) and _asserts(node):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                spans.append((first, node.end_lineno or node.lineno))
        elif isinstance(node, ast.If) and _is_main_guard(node.test):
            if _asserts_on_outputs(node) and not _trains(node):
                spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def _asserts(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Assert):
            return True
        if isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("assert"):
                return True
    return False


def _asserts_on_outputs(block: ast.If) -> bool:
    """An ``assert`` on what an object built in the block returned (``net =
    Net(); out = net(x); assert out.shape == ...``): a self-check. Not an
    argument check of a demo script (``assert len(im_scales) == 1`` on what a
    helper function returned)."""
    built: set[str] = set()
    outputs: set[str] = set()
    for stmt in ast.walk(block):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            names = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            func = stmt.value.func
            if isinstance(func, ast.Name) and func.id in built:
                outputs |= names
            else:
                built |= names
        elif isinstance(stmt, ast.Assert):
            if {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & outputs:
                return True
    return False


def _trains(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("backward", "step", "fit")
        for n in ast.walk(node)
    )


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either side)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, *test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names) and bool(mains)


def outside_test_classes(ctx: FileContext, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` less those inside a ``TestCase`` class, a test function
    that asserts, or a ``__main__`` self-check (``test_function_spans``)."""
    text = ctx.source
    if not findings:
        return list(findings)
    spans = []
    if "def test_" in text or "def _test_" in text or "__main__" in text:
        spans.extend(test_function_spans(ctx.tree))
    if "TestCase" in text or "class Test" in text or ctx.project is not None:
        for cls in test_case_classes(ctx.tree, ctx.facts.imports, ctx.facts.project):
            first = min([cls.lineno, *(d.lineno for d in cls.decorator_list)])
            spans.append((first, cls.end_lineno or cls.lineno))
    if not spans:
        return list(findings)
    return [f for f in findings if not any(a <= f.line <= b for a, b in spans)]
