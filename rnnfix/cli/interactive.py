"""``rnnfix apply -i``: a person accepts or declines each fix.

The engine asks (``rnnfix.run.engine.reviewing``) before each fix goes in, with
the source before it and with that fix alone; this module shows the finding
and the diff and reads the answer, one line of stdin per question (as
``git add -p`` does without ``interactive.singleKey``):

- ``y`` apply this fix, ``n`` do not;
- ``a`` apply this fix and every remaining one (in every file) without asking;
- ``q`` do not apply this fix nor any remaining one; the fixes already
  accepted are still written;
- ``d`` print the rule's documentation, then ask again; ``?`` the help.

End of input (stdin closed, or a script that runs out of answers) counts as
``q``: nothing more is applied, so a run without a person never writes a fix
nobody accepted. Later passes ask about the fixes that accepted ones lead to
(the ``train()`` RNF001 asks for after RNF003's ``eval()``), on the source as
the accepted fixes left it. An answer is remembered for the run: when the
cross-file analysis re-checks a file, a fix already answered is not asked
about again.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import click

from rnnfix.analysis.context import Finding
from rnnfix.report import colour
from rnnfix.report.diff import unified_diff
from rnnfix.report.formats import text_line

HELP = (
    "y - apply this fix\n"
    "n - do not apply this fix\n"
    "a - apply this fix and all remaining ones\n"
    "q - quit: apply neither this fix nor any remaining one\n"
    "d - show the rule's documentation\n"
    "? - print this help\n"
)
PROMPT = "Apply this fix [y,n,a,q,d,?]? "


class Reviewer:
    """The ``decide`` the engine calls; ``read_line`` returns None at end of input."""

    def __init__(
        self,
        read_line: Callable[[], str | None],
        coloured: bool = False,
        echo: Callable[[str], None] | None = None,
        echo_answers: bool = False,
    ) -> None:
        self.read_line = read_line
        # Answers piped in are not echoed by a terminal: the transcript shows them.
        self.echo_answers = echo_answers
        self.coloured = coloured
        self.echo = echo or (lambda text: click.echo(text, nl=False, color=True))
        self.mode = "ask"  # or "all", "quit"
        self.answers: dict[tuple[str, str, int, str], bool] = {}
        self.asked = 0
        self.accepted = 0
        self._notebooks: dict[str, object] = {}

    def __call__(self, path: str, finding: Finding, before: str, after: str) -> bool:
        key = (path, finding.code, finding.line, after)
        if key not in self.answers:
            self.answers[key] = self._decide(path, finding, before, after)
            self.accepted += self.answers[key]
        return self.answers[key]

    def _decide(self, path: str, finding: Finding, before: str, after: str) -> bool:
        if self.mode != "ask":
            return self.mode == "all"
        shown, old, new = self._as_file(path, finding, before, after)
        self.asked += 1
        line = text_line(path, shown, unsafe_fixes=True)
        if finding.fix is not None and not finding.fix.safe:
            line += " (unsafe fix)"
        line += "\n"
        text = unified_diff(path, old, new)
        if self.coloured:
            line, text = colour.diagnostics(line), colour.diff(text)
        self.echo(("\n" if self.asked > 1 else "") + line + text)
        while True:
            self.echo(click.style(PROMPT, bold=True) if self.coloured else PROMPT)
            answer = self.read_line()
            if answer is not None and self.echo_answers:
                self.echo(answer if answer.endswith("\n") else answer + "\n")
            if answer is None:
                self.echo("\nrnnfix: end of input: no further fix applied\n")
                self.mode = "quit"
                return False
            choice = answer.strip().lower()[:1]
            if choice == "y":
                return True
            if choice == "n":
                return False
            if choice == "a":
                self.mode = "all"
                return True
            if choice == "q":
                self.mode = "quit"
                return False
            if choice == "d":
                self.echo(_docs(finding.code))
            else:
                self.echo(HELP)

    def _as_file(
        self, path: str, finding: Finding, before: str, after: str
    ) -> tuple[Finding, str, str]:
        """A notebook's fix as its cells (the engine sees its code cells as
        one module): the finding at its cell's line, the diff of the cells."""
        if not path.endswith(".ipynb"):
            return finding, before, after
        from rnnfix.run.process import cell_line_refs
        from rnnfix.source import notebooks
        from rnnfix.source.files import FileProblem, read_source

        nb = self._notebooks.get(path)
        try:
            if nb is None:
                nb = self._notebooks[path] = notebooks.parse(read_source(Path(path))[1].text)
            assert isinstance(nb, notebooks.Notebook)
            cell, line = nb.locate(finding.line)
            end = None if finding.end_line is None else finding.end_line - (finding.line - line)
            # The engine says the finding, its message included, at the
            # input's lines (the notebook on disk), whatever the fixes
            # accepted before it moved.
            message = cell_line_refs(nb, finding.message, cell, None)
            shown = dataclasses.replace(
                finding, line=line, end_line=end, cell=cell, message=message
            )
            return shown, notebooks.render(nb, before), notebooks.render(nb, after)
        except (FileProblem, OSError):
            return finding, before, after  # shown as the module the engine fixes


def _docs(code: str) -> str:
    from rnnfix.rules import all_rules

    cls = all_rules().get(code)
    if cls is None:
        return f"{code}: no documentation\n"
    return f"# {cls.code} {cls.name}\n\nFix: {cls.fix_safety}\n\n{cls.docs.strip()}\n\n"


def stdin_lines() -> Callable[[], str | None]:
    """Answers from stdin, one a line; None at its end."""

    def read() -> str | None:
        line = sys.stdin.readline()
        return line if line else None

    return read
