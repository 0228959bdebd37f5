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


# Issue 38, item 12: a line rnnfix inserts ends as the line it follows does,
# whatever the file's first line ends with (libcst's default for new lines).
@pytest.mark.parametrize(
    ("first", "rest"),
    [("\r", "\n"), ("\n", "\r\n"), ("\r\n", "\n")],
    ids=["lf-with-a-bare-cr", "crlf-after-an-lf-line", "lf-after-a-crlf-line"],
)
def test_inserted_lines_take_the_ending_of_the_line_they_follow(first: str, rest: str) -> None:
    head, body = BUGGY.split("\n", 1)
    # The first line holds two statements on two lines (a bare CR between them).
    source = head + first + "import os" + rest + body.replace("\n", rest)
    fixed = fix_source(source, Settings()).fixed
    assert "model.train()" in fixed
    from rnnfix.source.lines import split_lines

    new = split_lines(fixed)
    old = split_lines(source)
    inserted = next(i for i, line in enumerate(new) if "model.train()" in line)
    assert new[inserted] == "    model.train()" + rest, repr(new[inserted])
    assert new[inserted - 1].endswith(rest)
    # Every other line keeps its bytes.
    assert new[:inserted] + new[inserted + 1 :] == old


def test_a_wrap_in_a_file_with_mixed_endings_keeps_every_line_ending() -> None:
    """RNF003's fix wraps a loop: the ``with`` line it writes ends as the
    line above it, the wrapped lines as they did."""
    from tests.cli.test_followups import SRC

    source = "import os\rimport sys\n" + SRC
    fixed = fix_source(source, Settings()).fixed
    from rnnfix.source.lines import split_lines

    lines = split_lines(fixed)
    assert lines[0] == "import os\r"
    assert all(line.endswith("\n") and not line.endswith("\r\n") for line in lines[1:])
    assert "\r" not in "".join(lines[1:])
