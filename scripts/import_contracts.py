"""rnnfix's own import-linter contract type, registered in pyproject.toml
(``[tool.importlinter] contract_types``); ``lint-imports`` imports this module
from the repository root.

``acyclic_modules``: no circle in the module import graph, counting every
import: those under ``if TYPE_CHECKING:`` and those inside functions too. The
layer contracts leave type-checking imports out (they name types for mypy and
run nothing), and ``acyclic_siblings`` squashes packages; this one sees each
module on its own, on a graph of its own built with type-checking imports
kept, so that a type both sides of a circle need has to live in a module both
import (a protocol, plain data) instead of one side naming the other.
"""

from __future__ import annotations

from collections.abc import Iterator

import grimp
from importlinter import Contract, ContractCheck, output


class AcyclicModulesContract(Contract):
    type_name = "acyclic_modules"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        roots = sorted(self.session_options["root_packages"])
        full = grimp.build_graph(*roots, exclude_type_checking_imports=False, cache_dir=None)
        circles = [(len(part), _circle(full, part)) for part in _strongly_connected(full)]
        return ContractCheck(kept=not circles, metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for size, circle in check.metadata["circles"]:
            output.print_error(
                f"{size} modules import one another (type-checking and function-level"
                " imports count); the shortest circle through the first:"
            )
            output.new_line()
            for importer, imported in zip(circle, circle[1:], strict=False):
                output.print_error(f"- {importer} -> {imported}", bold=False)
            output.new_line()


def _strongly_connected(graph: grimp.ImportGraph) -> list[set[str]]:
    """The sets of two or more modules that import one another, directly or
    not (Tarjan's algorithm, iterative: no recursion limit to meet)."""

    def imported(module: str) -> Iterator[str]:
        return iter(sorted(graph.find_modules_directly_imported_by(module)))

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def enter(module: str) -> tuple[str, Iterator[str]]:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        return module, imported(module)

    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [enter(root)]
        while work:
            node, pending = work[-1]
            for child in pending:
                if child not in index:
                    work.append(enter(child))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    part: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.add(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(part)
    return found


def _circle(graph: grimp.ImportGraph, part: set[str]) -> list[str]:
    """One circle through ``part``, as the modules in import order (the first
    again at the end): the shortest way from one of its imports back."""
    start = min(part)
    best: list[str] | None = None
    for first in sorted(graph.find_modules_directly_imported_by(start) & part):
        back = graph.find_shortest_chain(importer=first, imported=start)
        if back is not None and (best is None or len(back) < len(best) - 1):
            best = [start, *back]
    return best or sorted(part)
