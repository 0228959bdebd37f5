"""``rnnfix.lsp.analysis``: diagnostics from checking only, edits when asked,
why a document was not checked, and the settings' errors."""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import pytest

from rnnfix.analysis.context import Finding, Fix
from rnnfix.config.settings import Settings
from rnnfix.lsp.analysis import (
    Document,
    Problem,
    SettingsCache,
    TextEdit,
    analyse,
    fix_all_edits,
    fix_edits,
    replacements,
)
from rnnfix.source.edits import InsertStatements, Pos
from tests.cli.conftest import BUGGY, FIXED

EVAL_THEN_TRAIN = (
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "model = nn.LSTM(2, 2)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for x in range(3):\n"
    "    model(torch.zeros(1, 1, 2))[0].sum().backward()\n"
    "    opt.step()\n"
    "    model.eval()\n"
)


def _apply(text: str, edits: list[TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(at: tuple[int, int]) -> int:
        return starts[at[0]] + at[1] if at[0] < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: offset(e.start), reverse=True):
        text = text[: offset(e.start)] + e.text + text[offset(e.end) :]
    return text


def _python(text: str, settings: Settings | None = None) -> Document:
    return Document("/project/train.py", settings or Settings(), text=text)


def test_diagnostics_come_from_checking_and_edits_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rnnfix.run.engine as engine

    def no_fix_loop(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fix loop ran for diagnostics")

    with monkeypatch.context() as m:
        m.setattr(engine, "fix_source", no_fix_loop)
        result = analyse(_python(BUGGY))
    [item] = result.items
    assert item.finding.code == "RNF002" and item.fixable and result.problems == []
    # One fix applied alone; and "fix all" (the fix loop) when asked.
    [(cell, edits)] = fix_edits(_python(BUGGY), item.finding).items()
    assert cell is None and _apply(BUGGY, edits) == FIXED
    [(cell, edits)] = fix_all_edits(_python(BUGGY)).items()
    assert cell is None and _apply(BUGGY, edits) == FIXED


def test_an_unsafe_fix_is_fixable_only_with_unsafe_fixes() -> None:
    text = "def f(model):\n    model.module.eval()\n"
    [item] = analyse(_python(text)).items
    assert item.finding.fix is not None and not item.finding.fix.safe and not item.fixable
    [item] = analyse(_python(text, Settings(unsafe_fixes=True))).items
    assert item.fixable


def test_a_fix_the_fix_loop_would_refuse_gives_no_edit() -> None:
    [item] = analyse(_python(BUGGY)).items
    anchor = Pos(4, 0)
    bad = {
        "does not parse": ("model.train(",),
        "reads a name nothing binds": ("undefined_name.train()",),
    }
    for code in bad.values():
        fix = Fix((InsertStatements(anchor, code),), safe=True)
        assert fix_edits(_python(BUGGY), dataclasses.replace(item.finding, fix=fix)) == {}
    good = Fix((InsertStatements(anchor, ("model.train()",)),), safe=True)
    assert fix_edits(_python(BUGGY), dataclasses.replace(item.finding, fix=good)) != {}


def test_a_file_that_does_not_parse_says_where() -> None:
    text = EVAL_THEN_TRAIN + "def broken(:\n    pass\n"
    result = analyse(_python(text))
    assert result.items == []
    [problem] = result.problems
    assert problem.message.startswith("cannot parse: ")
    lineno = text.splitlines().index("def broken(:")
    assert (problem.line, problem.cell) == (lineno, None)
    try:
        compile(text, "t.py", "exec")
    except SyntaxError as exc:
        assert exc.offset is not None
        assert problem.col == exc.offset - 1


def test_a_notebook_cell_that_does_not_parse_is_said_on_that_cell() -> None:
    cells = ((True, EVAL_THEN_TRAIN), (False, "# Notes\n"), (True, "x = (\n"))
    result = analyse(Document("/project/nb.ipynb", Settings(), cells=cells))
    # The other cells are still checked; the broken one says why, on its line.
    assert [i.cell for i in result.items] == [0]
    [problem] = result.problems
    assert problem.cell == 2 and problem.line == 0
    assert "cannot parse" in problem.message


def test_a_notebook_with_no_cell_that_parses_fails_on_the_cell() -> None:
    cells = ((True, "model.eval()\nx = (\n"),)
    result = analyse(Document("/project/nb.ipynb", Settings(), cells=cells))
    assert result.items == []
    [problem] = result.problems
    assert problem == Problem(problem.message, 1, None, 0)


def test_replacements_turn_the_old_text_into_the_new() -> None:
    rng = random.Random(7)
    pool = ["a = 1\n", "b = 2\n", "model.train()\n", "\n", "    x\n", "last"]
    for _ in range(500):
        old = "".join(rng.choice(pool[:-1]) for _ in range(rng.randrange(8)))
        new_lines = old.splitlines(keepends=True)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(new_lines) + 1)
            if new_lines and rng.random() < 0.4:
                del new_lines[min(at, len(new_lines) - 1)]
            else:
                new_lines.insert(at, rng.choice(pool[:-1]))
        if rng.random() < 0.2:
            old += "last"
            new_lines.append("last" if rng.random() < 0.5 else "other")
        new = "".join(new_lines)
        assert _apply(old, replacements(old, new)) == new, (old, new)


def test_a_broken_configuration_is_said_once_and_the_defaults_used(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.rnnfix\nselect = ['RNF002']\n")
    doc = str(tmp_path / "train.py")
    cache = SettingsCache()
    settings, error = cache.settings_for(doc)
    assert settings == Settings() and error is not None
    assert str(pyproject) in error and "cannot read configuration" in error
    assert cache.settings_for(doc) == (Settings(), None)  # said once
    pyproject.write_text('[tool.rnnfix]\nselect = ["RNF002"]\n')
    stat = pyproject.stat()
    os.utime(pyproject, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    settings, error = cache.settings_for(doc)
    assert error is None and settings.enabled("RNF002") and not settings.enabled("RNF001")


def test_findings_are_plain_data() -> None:
    """What crosses to the analysis process and back pickles."""
    import pickle

    result = analyse(_python(BUGGY))
    again = pickle.loads(pickle.dumps(result))
    assert again == result
    assert isinstance(again.items[0].finding, Finding)
