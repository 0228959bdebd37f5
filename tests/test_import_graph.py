"""rnnfix's module import graph has no circle, counting every import: those
under ``if TYPE_CHECKING:`` and those inside functions (lazy imports) too.

Built here from the source with ``ast`` and checked by a topological sort,
independently of import-linter (whose ``acyclic_modules`` contract,
``scripts/import_contracts.py``, checks the same on grimp's graph with
Tarjan's algorithm).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "rnnfix"


def module_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports anywhere in its code: at
    the top, under ``if TYPE_CHECKING:``, inside functions."""
    files: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path

    def known(name: str) -> str | None:
        """The module ``name`` is, or is a name in (``pkg.mod.Class``)."""
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package_name = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package_name.split(".")[: len(package_name.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                # ``from pkg import mod`` imports the module ``pkg.mod``;
                # ``from pkg.mod import name``, ``pkg.mod``.
                found.update(known(f"{base}.{alias.name}") for alias in node.names)
        graph[module] = {m for m in found if m is not None and m != module}
    return graph


def on_circles(graph: dict[str, set[str]]) -> set[str]:
    """The modules on an import circle or importing one: what is left after
    taking away, again and again, the modules that import nothing left (a
    topological sort that gets stuck only at a circle)."""
    left = {module: set(imported) for module, imported in graph.items()}
    while leaves := {module for module, imported in left.items() if not imported}:
        for module in leaves:
            del left[module]
        for imported in left.values():
            imported -= leaves
    return set(left)


def test_rnnfix_has_no_import_circle() -> None:
    assert on_circles(module_graph(ROOT)) == set()


def test_the_graph_counts_type_checking_and_function_level_imports() -> None:
    """Not vacuous: the imports the layer contracts leave out are edges here."""
    graph = module_graph(ROOT)
    # ``FileContext.facts`` imports the facts inside the property, and names
    # their type under ``TYPE_CHECKING``.
    assert "rnnfix.analysis.facts" in graph["rnnfix.analysis.context"]
    # The project index summarises a file with ``summarise``, imported lazily.
    assert "rnnfix.analysis.project.summarise" in graph["rnnfix.analysis.project.index"]
    # ``ModeFlow``'s parts name it by its protocol, under ``TYPE_CHECKING``.
    assert "rnnfix.analysis.modes.flowview" in graph["rnnfix.analysis.modes.summary"]


def test_a_type_checking_circle_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.c import C\n"
        "class B: ...\n"
    )
    (package / "c.py").write_text("def f():\n    from . import a\n")
    (package / "d.py").write_text("import pkg.a\n")  # imports the circle, is not on it
    (package / "e.py").write_text("import pkg.d\n")
    assert on_circles(module_graph(package)) == {"pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e"}


def test_no_circle_without_one(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from pkg import c\n")
    (package / "c.py").write_text("")
    assert on_circles(module_graph(package)) == set()
