"""Colour for people at a terminal: whether to use it, and diffs and
diagnostics coloured as ruff colours them.

Precedence (most specific first): ``--color always|never``; then
``NO_COLOR`` (https://no-color.org: set and not empty -> no colour); then
``FORCE_COLOR`` (set and not empty -> colour); then ``auto``: colour only when
the stream is a terminal. Text is only ever styled when colour is on, so a
source's own escape characters are never stripped from a diff.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

import click

CHOICES = ("auto", "always", "never")


def use_colour(choice: str, stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    if choice != "auto":
        return choice == "always"
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def diff(text: str) -> str:
    """A unified diff with removed lines red, added lines green, hunk headers cyan."""
    out = []
    for line in text.splitlines(keepends=True):
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if line.startswith(("--- ", "+++ ")):
            body = click.style(body, bold=True)
        elif line.startswith("@@"):
            body = click.style(body, fg="cyan")
        elif line.startswith("-"):
            body = click.style(body, fg="red")
        elif line.startswith("+"):
            body = click.style(body, fg="green")
        out.append(body + end)
    return "".join(out)


_DIAGNOSTIC = re.compile(
    r"^(?P<where>.+?:(?:cell \d+:)?\d+:\d+:) (?P<code>[A-Z]+\d+)(?P<mark> \[\*\])?(?P<rest>.*)$"
)


def diagnostics(text: str) -> str:
    """``path:line:col: CODE [*] message`` lines: the place bold, the code red
    and bold, the fixable mark cyan; other lines as they are."""
    out = []
    for line in text.splitlines(keepends=True):
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        m = _DIAGNOSTIC.match(body)
        if m:
            body = (
                click.style(m.group("where"), bold=True)
                + " "
                + click.style(m.group("code"), fg="red", bold=True)
                + (click.style(m.group("mark"), fg="cyan") if m.group("mark") else "")
                + m.group("rest")
            )
        out.append(body + end)
    return "".join(out)
