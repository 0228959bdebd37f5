"""What the language server sends, from what ``rnnfix.lsp.analysis`` says:
positions in the client's encoding (UTF-16 code units), ranges, text
edits and diagnostics, as lsprotocol's types."""

from __future__ import annotations

from lsprotocol import types

from rnnfix.lsp.analysis import Item, Problem, TextEdit
from rnnfix.report.rulelinks import rule_url

SOURCE = "rnnfix"


# --- positions ---------------------------------------------------------------


def _utf16(line: str, col: int) -> int:
    """A character column of ``line`` as UTF-16 code units (LSP's default)."""
    return len(line[:col].encode("utf-16-le")) // 2


def position(lines: list[str], line: int, col: int) -> types.Position:
    text = lines[line] if 0 <= line < len(lines) else ""
    return types.Position(line=line, character=_utf16(text, col))


def _line_end(lines: list[str], line: int) -> int:
    return len(lines[line].rstrip("\r\n")) if 0 <= line < len(lines) else 0


def finding_range(lines: list[str], f: Item) -> types.Range:
    finding = f.finding
    start = position(lines, finding.line - 1, finding.col - 1)
    if finding.end_line is not None and finding.end_col is not None:
        end = position(lines, finding.end_line - 1, finding.end_col - 1)
    else:
        end = position(lines, finding.line - 1, _line_end(lines, finding.line - 1))
    return types.Range(start=start, end=end)


def text_edits(lines: list[str], edits: list[TextEdit]) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=types.Range(start=position(lines, *e.start), end=position(lines, *e.end)),
            new_text=e.text,
        )
        for e in edits
    ]


# --- diagnostics -----------------------------------------------------------------


def diagnostic(lines: list[str], item: Item) -> types.Diagnostic:
    f = item.finding
    return types.Diagnostic(
        range=finding_range(lines, item),
        message=f.message,
        severity=types.DiagnosticSeverity.Warning,
        code=f.code,
        code_description=types.CodeDescription(href=rule_url(f.code)),
        source=SOURCE,
        data={"fixable": item.fixable},
    )


def problem_diagnostic(lines: list[str], p: Problem) -> types.Diagnostic:
    """Why the document (or a cell) was not checked: an error at a syntax
    error's place, else a warning on the first line."""
    line = p.line if p.line is not None and 0 <= p.line < max(len(lines), 1) else 0
    col = min(p.col or 0, _line_end(lines, line))
    return types.Diagnostic(
        range=types.Range(
            start=position(lines, line, col), end=position(lines, line, _line_end(lines, line))
        ),
        message=p.message,
        severity=types.DiagnosticSeverity.Error
        if p.line is not None
        else types.DiagnosticSeverity.Warning,
        source=SOURCE,
    )
