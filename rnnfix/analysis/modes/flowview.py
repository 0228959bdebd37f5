"""The mode flow as its own parts see it (``FlowView``), and the file as the
flow reads it (``FlowSource``).

``rnnfix.analysis.modes.modeflow.ModeFlow`` builds its parts (the summaries,
the whole-file pass, grad mode, the evidence, the interpreter ``flow``,
freezing, intent, ...) and hands each itself; they ask it back through this
protocol, not through ``ModeFlow``'s type, so that the flow imports its parts
and no part imports the flow. ``FlowSource`` does the same for the file
context (``rnnfix.analysis.context.FileContext``), whose facts build the flow.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from rnnfix.analysis.modes.records import (
        GradSwitch,
        LoopNode,
        ModeCall,
        ModelCall,
        Summary,
        TrainingStep,
    )
    from rnnfix.analysis.modes.state import ModeState
    from rnnfix.analysis.project.summaries import ExternalCall, FunctionSummary
    from rnnfix.analysis.project.view import ProjectView
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import FileIndex, FuncNode, FunctionInfo, Resolved
    from rnnfix.analysis.torch.models import ModelInfo, ModuleClasses
    from rnnfix.analysis.torch.optimizers import Optimizers


class FlowFacts(Protocol):
    """The parsed facts of the file the flow reads (``FileFacts``)."""

    @property
    def imports(self) -> ImportMap: ...

    @property
    def parents(self) -> dict[ast.AST, ast.AST]: ...

    @property
    def index(self) -> FileIndex: ...

    @property
    def project(self) -> ProjectView | None: ...


class FlowSource(Protocol):
    """The file the flow is built for (``FileContext``)."""

    @property
    def source(self) -> str: ...

    @property
    def lines(self) -> list[str]: ...  # the source's lines (comments: ``modes.comments``)

    @property
    def tree(self) -> ast.Module: ...

    @property
    def facts(self) -> FlowFacts: ...


class FreezingView(Protocol):
    """What the parts ask of ``freezing.Freezing``."""

    def freezes_near(self, origin: ast.AST, model: str) -> GradSwitch | None: ...


class FlowView(FlowFacts, Protocol):
    """What the flow's parts may ask the flow: the file (its facts as the
    flow holds them), the models it tracks and the questions ``ModeFlow``
    answers (see there)."""

    @property
    def ctx(self) -> FlowSource: ...

    @property
    def tree(self) -> ast.Module: ...

    @property
    def classes(self) -> ModuleClasses: ...

    @property
    def summaries_only(self) -> bool: ...

    @property
    def models(self) -> dict[str, ModelInfo]: ...

    @property
    def optimizers(self) -> Optimizers: ...

    @property
    def freezing(self) -> FreezingView: ...

    @property
    def _plain_names(self) -> dict[ast.AST, frozenset[str]]: ...

    @property
    def mode_calls(self) -> list[ModeCall]: ...

    @property
    def model_calls(self) -> list[ModelCall]: ...

    @property
    def training_steps(self) -> list[TrainingStep]: ...

    def is_model(self, key: str) -> bool: ...

    def holds_model(self, key: str) -> bool: ...

    def tracks(self, key: str) -> bool: ...

    def model_info(self, key: str) -> ModelInfo | None: ...

    def aliases(
        self, scope: FuncNode | None, params: bool = False
    ) -> dict[str, tuple[str, ast.stmt]]: ...

    def canonical(self, key: str, scope: FuncNode | None) -> str: ...

    def grad_enabled(self, node: ast.AST) -> bool | None: ...

    def mode_before(self, node: ast.AST, model: str) -> ModeState: ...

    def stmt_of(self, node: ast.AST) -> ast.stmt | None: ...

    def scope_of(self, node: ast.AST) -> FuncNode | None: ...

    def loops_of(self, node: ast.AST) -> tuple[LoopNode, ...]: ...

    def contains(self, outer: ast.AST) -> Callable[[ast.AST], bool]: ...

    def function_info(self, fn: FuncNode) -> FunctionInfo | None: ...

    def in_lightning_module(self, fn: FuncNode | None) -> bool: ...

    def resolve(
        self, call: ast.Call, scope: FuncNode | None, target: str | None = None
    ) -> Resolved | None: ...

    def callers(self, fn: FuncNode) -> list[tuple[FuncNode | None, ast.Call]]: ...

    def call_sites(self, fn: FuncNode) -> list[tuple[FuncNode | None, ast.Call, Resolved]]: ...

    def scopes(self) -> list[FuncNode | None]: ...

    def scope_calls(self, scope: FuncNode | None) -> list[ast.Call]: ...

    def calls_of(self, node: ast.AST | None) -> list[ast.Call]: ...

    def forward_path(self, call: ast.Call, is_model: Callable[[str], bool]) -> str | None: ...

    def forward_key(self, call: ast.Call) -> str | None: ...

    def step_kind(self, call: ast.Call) -> Literal["backward", "optimizer_step"] | None: ...

    def summary(self, info: FunctionInfo) -> Summary: ...

    def callee_summary(
        self, call: ast.Call, scope: FuncNode | None
    ) -> tuple[Summary, Callable[[str], str | None]] | None: ...

    def public_methods(
        self, cls: ast.ClassDef
    ) -> dict[str, FuncNode | tuple[FunctionSummary, ast.expr]]: ...

    def external(self, call: ast.Call, scope: FuncNode | None) -> ExternalCall | None: ...

    def object_method(
        self, owner: str, method: str
    ) -> tuple[Summary, Callable[[str], str | None]] | None: ...

    def mode_target(self, receiver: str) -> str: ...
