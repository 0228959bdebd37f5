"""Per-file facts computed once and shared by every rule."""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Protocol

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.walks import tree_parents

if TYPE_CHECKING:
    from rnnfix.analysis.evalgrad.in_scope import EvalGradAnalysis
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.modes.receivers import Receivers
    from rnnfix.analysis.project.view import Index, ProjectView
    from rnnfix.analysis.syntax.scopes import FileIndex


class FactsSource(Protocol):
    """The file the facts are of (``rnnfix.analysis.context.FileContext``,
    which builds them on first use: a protocol, so that the facts and the
    analyses they build do not import the context)."""

    @property
    def source(self) -> str: ...

    @property
    def lines(self) -> list[str]: ...

    @property
    def tree(self) -> ast.Module: ...

    @property
    def path(self) -> str: ...

    @property
    def project(self) -> Index | None: ...

    @property
    def facts(self) -> FileFacts: ...


class FileFacts:
    def __init__(self, ctx: FactsSource) -> None:
        self.ctx = ctx
        self.tree = ctx.tree

    @classmethod
    def build(cls, ctx: FactsSource) -> FileFacts:
        return cls(ctx)

    @functools.cached_property
    def imports(self) -> ImportMap:
        return ImportMap.build(self.tree)

    @functools.cached_property
    def project(self) -> ProjectView | None:
        """The other files of the run, as this file's imports see them."""
        if self.ctx.project is None:
            return None
        return self.ctx.project.view(self.ctx.path, self.tree, self.ctx.source)

    @functools.cached_property
    def index(self) -> FileIndex:
        """The file's functions and classes (``FileIndex``: read-only once
        built), shared by the mode flow and the load finder."""
        from rnnfix.analysis.syntax.scopes import FileIndex

        return FileIndex(self.tree, self.imports)

    @functools.cached_property
    def modes(self) -> ModeFlow:
        """The mode-flow analysis (models, modes, grad mode, training steps)."""
        from rnnfix.analysis.modes.modeflow import ModeFlow

        return ModeFlow(self.ctx)

    @functools.cached_property
    def receivers(self) -> Receivers:
        """Whether a fix may call ``train()``/``eval()`` on an object (overrides, real modules)."""
        from rnnfix.analysis.modes.receivers import Receivers

        return Receivers(self.ctx)

    @functools.cached_property
    def evalgrad(self) -> EvalGradAnalysis:
        """Gradients computed on purpose in eval mode, RNNs, optimizer ownership."""
        from rnnfix.analysis.evalgrad.in_scope import EvalGradAnalysis

        return EvalGradAnalysis(self.tree, self.imports, self.parents, self.project)

    @functools.cached_property
    def mentions_lightning(self) -> bool:
        """Whether "lightning" appears anywhere in the source, in any case."""
        return "lightning" in self.ctx.source.lower()

    @functools.cached_property
    def step_loops(self) -> dict[ast.AST, set[ast.AST | None]]:
        """``regions.in_training_iteration``'s memo: per loop or scope, the
        innermost loops of the training steps in its own code."""
        return {}

    @functools.cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        return tree_parents(self.tree)

    def release(self) -> None:
        """Drop what the analyses hold, once no rule reads them again: the
        mode flow is a cycle holding the file's tree (``ModeFlow.release``),
        and these facts and their context point at each other. Left to the
        cyclic garbage collector, the trees of a cold run on the fine-tuning
        tree (a million nodes) cost a tenth of its CPU time."""
        modes = self.__dict__.get("modes")
        if modes is not None:
            modes.release()
        self.__dict__.clear()

    def ancestors(self, node: ast.AST) -> list[ast.AST]:
        out = []
        parents = self.parents
        while node in parents:
            node = parents[node]
            out.append(node)
        return out

    def torch_name(self) -> str | None:
        """How this file spells ``torch`` (``torch``, ``th``), if it imports it."""
        return self.imports.alias_for("torch")
