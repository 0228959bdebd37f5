"""The per-file context every rule and every analysis reads, and what a rule
reports (``Finding``, ``Fix``).

It sits below both ``rnnfix.rules`` and ``rnnfix.analysis`` so that the layers
import top to bottom (CLI -> process -> engine -> rules -> analysis ->
context -> files/edits): rules and analyses both import this module, and it
imports neither (the analyses it builds on first use are imported lazily).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.config.settings import Settings
from rnnfix.source.edits import Edit, Pos
from rnnfix.source.lines import split_lines

if TYPE_CHECKING:
    from rnnfix.analysis.facts import FileFacts
    from rnnfix.analysis.project.view import Index


@dataclass(frozen=True)
class Fix:
    """Edits that together fix one finding. ``safe`` fixes apply by default;
    unsafe ones only with ``--unsafe-fixes``."""

    edits: tuple[Edit, ...]
    safe: bool
    description: str = ""


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    line: int  # 1-based
    col: int  # 1-based, in characters (what editors show)
    fix: Fix | None = None
    end_line: int | None = None
    end_col: int | None = None
    cell: int | None = None  # notebooks: 1-based cell number; lines count within it

    @property
    def fixable(self) -> bool:
        return self.fix is not None


@dataclass(frozen=True)
class DroppedFix:
    """A finding whose fix the engine refused, and why (one line)."""

    finding: Finding
    reason: str


@dataclass
class FileContext:
    """Everything a rule may look at for one file. Analyses are computed once,
    on first use, and shared by every rule. ``project``: summaries of the other
    files of the run (``apply`` on several files), for calls into them; None
    for a source on its own (``rnnfix.check``, stdin)."""

    source: str
    tree: ast.Module
    settings: Settings = field(default_factory=Settings)
    path: str = "<stdin>"
    project: Index | None = None

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    def pos(self, node: ast.AST) -> Pos:
        """Start of an ``ast`` node as a character-based ``Pos``."""
        return self._to_pos(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end_pos(self, node: ast.AST) -> Pos:
        return self._to_pos(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def _to_pos(self, line: int, byte_col: int) -> Pos:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        if text.isascii():
            return Pos(line, byte_col)
        return Pos(line, len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")))

    @functools.cached_property
    def _encoded_lines(self) -> list[bytes]:
        return [line.encode("utf-8", "surrogatepass") for line in self.lines]

    def segment(self, node: ast.AST) -> str:
        """The node's source text exactly as written: ``ast.get_source_segment``'s
        answer (unpadded), from the file's lines split once rather than at every
        call (it splits the whole source character by character each time)."""
        end_line = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None:
            return ""
        first, last = int(getattr(node, "lineno")) - 1, int(end_line) - 1  # noqa: B009
        col = int(getattr(node, "col_offset"))  # noqa: B009
        end_col = int(end_col)
        lines = self._encoded_lines
        try:
            if first == last:
                return lines[first][col:end_col].decode("utf-8", "surrogatepass")
            head = lines[first][col:].decode("utf-8", "surrogatepass")
            tail = lines[last][:end_col].decode("utf-8", "surrogatepass")
            middle = self.lines[first + 1 : last]
        except (IndexError, UnicodeDecodeError):
            return ast.get_source_segment(self.source, node) or ""
        return "".join([head, *middle, tail])

    @functools.cached_property
    def facts(self) -> FileFacts:
        from rnnfix.analysis.facts import FileFacts

        return FileFacts.build(self)

    def finding(self, code: str, node: ast.AST, message: str, fix: Fix | None = None) -> Finding:
        start = self.pos(node)
        end = self.end_pos(node)
        return Finding(code, message, start.line, start.col + 1, fix, end.line, end.col + 1)
