"""Test code that rnnfix leaves alone unless ``include-tests`` is set:
``unittest.TestCase`` subclasses inside any file (test files found in folders
are not discovered at all, see ``rnnfix.source.files``).

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


def outside_test_classes(ctx: FileContext, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` less those inside a ``TestCase`` class."""
    text = ctx.source
    if not findings or (
        "TestCase" not in text and "class Test" not in text and ctx.project is None
    ):
        return list(findings)
    spans = []
    for cls in test_case_classes(ctx.tree, ctx.facts.imports, ctx.facts.project):
        first = min([cls.lineno, *(d.lineno for d in cls.decorator_list)])
        spans.append((first, cls.end_lineno or cls.lineno))
    if not spans:
        return list(findings)
    return [f for f in findings if not any(a <= f.line <= b for a, b in spans)]
