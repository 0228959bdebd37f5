"""Item 7: lines are Python's lines. A form feed, vertical tab, ``\\x1c``,
U+0085, U+2028 or U+2029 in a comment is no line break: ``# rnnfix: ignore``,
message snippets and columns are read from the line ``ast`` names."""

from __future__ import annotations

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.engine import check_source, fix_source

from .conftest import BUGGY

ODD = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _with_odd_comment(char: str, source: str = BUGGY) -> str:
    lines = source.splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n") + f"  # an LSTM{char}of 8 units\n"
    return "".join(lines)


@pytest.mark.parametrize("char", ODD, ids=[repr(c) for c in ODD])
def test_an_ignore_comment_after_an_odd_character_is_read_on_its_line(char: str) -> None:
    source = _with_odd_comment(char)
    assert [f.code for f in check_source(source)] == ["RNF001"]
    lines = source.splitlines(keepends=True)
    # ``str.splitlines`` counts one line more: find line 8 as Python does.
    step = next(i for i, ln in enumerate(lines) if "backward()" in ln)
    lines[step] = lines[step].rstrip("\n") + "  # rnnfix: ignore\n"
    assert check_source("".join(lines)) == []


@pytest.mark.parametrize("char", ODD, ids=[repr(c) for c in ODD])
def test_snippets_and_columns_after_an_odd_character(char: str) -> None:
    plain = check_source(BUGGY)
    odd = check_source(_with_odd_comment(char))
    assert [(f.line, f.col, f.end_col, f.message) for f in odd] == [
        (f.line, f.col, f.end_col, f.message) for f in plain
    ]
    assert "`model.eval()` on line 10" in odd[0].message


def test_the_fix_lands_where_it_does_without_the_odd_character() -> None:
    plain = fix_source(BUGGY, Settings()).fixed
    odd = fix_source(_with_odd_comment("\u2028"), Settings()).fixed
    assert odd == _with_odd_comment("\u2028", plain)
