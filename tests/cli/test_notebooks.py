"""Notebooks: code cells fixed in place, magics kept, JSON layout kept, odd JSON reported."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest


def _nb(cells: list[dict[str, object]]) -> dict[str, object]:
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _code(*lines: str) -> dict[str, object]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": list(lines),
    }


CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training ☃"]},
    _code("%matplotlib inline\n", "import torch.nn as nn\n", "!nvidia-smi"),
    _code("model = nn.DataParallel(nn.Linear(2, 2))\n", "model.module.train()"),
    _code("%%bash\n", "model.module.train()"),
]


def _write(path: Path, data: object, **layout: object) -> str:
    text = json.dumps(data, ensure_ascii=False, **layout) + "\n"  # type: ignore[arg-type]
    path.write_text(text, encoding="utf-8")
    return text


def test_notebook_cell_is_fixed_and_layout_kept(run, tmp_path: Path) -> None:
    nb = tmp_path / "train.ipynb"
    _write(nb, _nb(CELLS), indent=1, sort_keys=True)
    result = run("--check", str(tmp_path))
    assert f"{nb}:cell 3:2:1: RNF002 [*]" in result.output
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["cells"][2]["source"] == [
        "model = nn.DataParallel(nn.Linear(2, 2))\n",
        "model.train()",
    ]
    assert data["cells"][1]["source"] == CELLS[1]["source"]  # magics kept
    assert data["cells"][3]["source"] == CELLS[3]["source"]  # %%bash: not Python
    expected = copy.deepcopy(_nb(CELLS))
    expected["cells"][2]["source"][1] = "model.train()"  # type: ignore[index]
    assert (
        nb.read_text(encoding="utf-8")
        == json.dumps(expected, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    )


def test_clean_notebook_untouched(run, tmp_path: Path) -> None:
    nb = tmp_path / "clean.ipynb"
    text = _write(nb, _nb(CELLS[:2]), indent=1, sort_keys=True)
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    assert nb.read_text(encoding="utf-8") == text


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not a notebook: invalid JSON"),
        ('{"cells": 3}', "not a notebook: no list of cells"),
        (
            '{"cells": [{"cell_type": "code", "source": 7}], "nbformat": 4}',
            "cell 1 has a source that is not text",
        ),
        ('{"cells": [], "nbformat": 3}', "notebook format 3 is not supported"),
    ],
)
def test_odd_json_is_reported(run, tmp_path: Path, content: str, reason: str) -> None:
    nb = tmp_path / "odd.ipynb"
    nb.write_text(content)
    result = run(str(nb))
    assert result.exit_code == 2
    assert f"{nb}: " in result.output and reason in result.output
    assert nb.read_text() == content


@pytest.mark.parametrize(
    "layout",
    [
        {"separators": (",", ":")},  # minified (Colab, some exporters)
        {"indent": 2, "separators": (", ", ": ")},  # old json.dumps: trailing spaces
    ],
    ids=["minified", "trailing-spaces"],
)
def test_other_layouts_are_edited_in_place(run, tmp_path: Path, layout: dict[str, object]) -> None:
    nb = tmp_path / "other.ipynb"
    text = json.dumps(_nb(CELLS), **layout)  # type: ignore[arg-type]
    nb.write_text(text)
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    # Cell 3's line changes; the same line in the %%bash cell after it stays.
    assert nb.read_text() == text.replace('"model.module.train()"', '"model.train()"', 1)


def test_cell_that_does_not_parse_is_reported_and_the_others_fixed(run, tmp_path: Path) -> None:
    nb = tmp_path / "bad.ipynb"
    cells = [*CELLS[1:3], _code("def f(:\n", "  pass")]
    _write(nb, _nb(cells), indent=1, sort_keys=True)
    result = run("--check", str(nb))
    assert result.exit_code == 1, result.output  # the finding, not the odd cell
    assert f"{nb}:cell 2:2:1: RNF002" in result.output
    assert f"{nb}: cell 3: not checked: line 1: cannot parse: invalid syntax\n" in result.output
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["cells"][1]["source"][1] == "model.train()"
    assert data["cells"][2]["source"] == cells[2]["source"]


def test_notebook_without_a_cell_that_parses_fails(run, tmp_path: Path) -> None:
    nb = tmp_path / "bad.ipynb"
    text = _write(nb, _nb([_code("def f(:\n", "  pass")]), indent=1, sort_keys=True)
    result = run(str(nb))
    assert result.exit_code == 2
    assert f"{nb}: cell 1: line 1: cannot parse" in result.output
    assert nb.read_text(encoding="utf-8") == text


# --- IPython syntax (issue 17 item 2) and cell magics with a Python body (issue 12) ---

HEAD = _code("import torch.nn as nn\n", "model = nn.DataParallel(nn.Linear(2, 2))\n")


def _fix(run, tmp_path: Path, cells: list[dict[str, object]], *args: str) -> dict[str, object]:
    nb = tmp_path / "nb.ipynb"
    _write(nb, _nb(cells), indent=1, sort_keys=True)
    result = run(*args, str(nb))
    assert result.exit_code == 0, result.output
    assert "not checked" not in result.output and "cannot parse" not in result.output
    return json.loads(nb.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "lines",
    [
        # The two examples: a shell escape continued by a backslash...
        ("!echo a && \\\n", "  echo b\n", "model.module.train()"),
        # ...and a line inside brackets that starts with % (the modulo operator).
        ('print(\n', '    "%d items"\n', "    % (3,)\n", ")\n", "model.module.train()"),
        ("x = 1 \\\n", "% 2\n", "model.module.train()"),  # % after a continuation
        ('s = """\n', "%not a magic\n", '"""\n', "model.module.train()"),
        ("files = !ls\n", "t = %timeit -o -q f()\n", "model.module.train()"),
        ("model?\n", "nn.Linear??\n", "?nn\n", "%time model.module.train()\n",
         "model.module.train()"),
        ("for i in range(2):\n", "    !echo {i} \\\n", "      more\n", "    model.module.train()"),
        ("%load_ext autoreload\n", "%autoreload 2\n", "model.module.train()  # %d?"),
    ],
    ids=["shell-continued", "modulo-in-brackets", "modulo-after-backslash", "string", "assign",
         "help", "indented-shell", "line-magics"],
)  # fmt: skip
def test_ipython_syntax_is_masked_as_ipython_does(
    run, tmp_path: Path, lines: tuple[str, ...]
) -> None:
    data = _fix(run, tmp_path, [HEAD, _code(*lines)])
    fixed = [*lines[:-1], lines[-1].replace("model.module.train()", "model.train()")]
    assert data["cells"][1]["source"] == fixed  # type: ignore[index]


def test_findings_after_a_continued_magic_have_the_cell_line(run, tmp_path: Path) -> None:
    nb = tmp_path / "nb.ipynb"
    cell = _code("!pip install \\\n", "  torch \\\n", "  numpy\n", "model.module.train()\n")
    _write(nb, _nb([HEAD, cell]), indent=1, sort_keys=True)
    result = run("--check", str(nb))
    assert f"{nb}:cell 2:4:1: RNF002" in result.output


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("as_list", [True, False], ids=["list", "string"])
def test_source_as_string_or_list_and_crlf(
    run, tmp_path: Path, newline: str, as_list: bool
) -> None:
    text = (
        f"!echo a && \\{newline}  echo b{newline}%time x = 1{newline}model.module.train(){newline}"
    )
    cell = _code()
    cell["source"] = text.splitlines(keepends=True) if as_list else text
    data = _fix(run, tmp_path, [HEAD, cell])
    got = data["cells"][1]["source"]  # type: ignore[index]
    expected = text.replace("model.module.train()", "model.train()")
    assert got == (expected.splitlines(keepends=True) if as_list else expected)


def test_noop_notebook_with_ipython_syntax_is_byte_identical(run, tmp_path: Path) -> None:
    nb = tmp_path / "clean.ipynb"
    cells = [
        HEAD,
        _code("!echo a && \\\n", "  echo b\n", "print(\n", '    "%d items"\n', "    % (3,)\n", ")"),
        _code("%%time\n", "model.train()\n", "y = 7 % 3\n"),
        _code("%%bash\n", "model.module.train()\n"),
        _code("%%writefile x.py\n", "import torch\n", "m.module.train()\n"),
        _code("files = !ls\n", "model?\n", "%matplotlib inline"),
        _code("pip install torch"),  # automagic: a one-line cell that is not Python
    ]
    text = _write(nb, _nb(cells), indent=1, sort_keys=True)
    result = run("--check", str(nb))
    assert result.exit_code == 0, result.output
    assert "not checked" not in result.output
    result = run(str(nb))
    assert result.exit_code == 0, result.output
    assert nb.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("magic", ["%%time", "%%timeit -n 1 -r 1", "%%capture out", "%%prun -q"])
def test_cell_magic_with_python_body_is_fixed(run, tmp_path: Path, magic: str) -> None:
    cell = _code(f"{magic}\n", "%time f()\n", "model.module.train()")
    data = _fix(run, tmp_path, [HEAD, cell])
    assert data["cells"][1]["source"] == [f"{magic}\n", "%time f()\n", "model.train()"]  # type: ignore[index]


@pytest.mark.parametrize(
    "magic", ["%%bash", "%%writefile train.py", "%%html", "%%time?", "  %%time"]
)
def test_other_cell_magics_stay_opaque(run, tmp_path: Path, magic: str) -> None:
    cell = _code(f"{magic}\n", "model.module.train()")
    data = _fix(run, tmp_path, [HEAD, cell])
    assert data["cells"][1]["source"] == cell["source"]  # type: ignore[index]


def test_eval_loop_in_a_time_cell_is_fixed(run, tmp_path: Path) -> None:
    cells = [
        _code("import torch\n", "import torch.nn as nn\n", "model = nn.Linear(2, 2)\n"),
        _code(
            "%%time\n",
            "model.eval()\n",
            "for x in [torch.randn(4, 2)]:\n",
            "    print(model(x).sum().item())\n",
        ),
    ]
    data = _fix(run, tmp_path, cells, "--select", "RNF003")
    assert data["cells"][1]["source"] == [  # type: ignore[index]
        "%%time\n",
        "model.eval()\n",
        "with torch.no_grad():\n",
        "    for x in [torch.randn(4, 2)]:\n",
        "        print(model(x).sum().item())\n",
    ]


def test_notebook_diff_shows_cell_source(run, tmp_path: Path) -> None:
    nb = tmp_path / "train.ipynb"
    cells = [HEAD, _code("%%time\n", "model.module.train()\n")]
    text = _write(nb, _nb(cells), indent=1, sort_keys=True)
    result = run("--diff", str(nb))
    assert result.exit_code == 1
    path = str(nb).lstrip("/")
    assert (
        f"--- a/{path}:cell 2\n+++ b/{path}:cell 2\n@@ -1,2 +1,2 @@\n %%time\n"
        "-model.module.train()\n+model.train()\n"
    ) in result.output
    assert nb.read_text(encoding="utf-8") == text


EVAL_CELL = _code(
    "def evaluate(model, loader):\n",
    "    model.eval()\n",
    # argmax: no graph leaves the function, so no_grad is a safe fix here.
    "    return [model(x).argmax(-1) for x in loader]\n",
)


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (
            _code("%matplotlib inline\n", "from torch import nn\n"),
            # with the file's torch imports (issue 9), in the first cell
            ["%matplotlib inline\n", "from torch import nn\n", "import torch\n"],
        ),
        (
            _code("%%time\n", "from torch import nn\n"),
            ["%%time\n", "from torch import nn\n", "import torch\n"],
        ),
    ],
    ids=["line-magic", "time-cell"],
)
def test_import_a_fix_needs_goes_into_the_first_cell(
    run, tmp_path: Path, first: dict[str, object], expected: list[str]
) -> None:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Eval"]}, first, EVAL_CELL]
    data = _fix(run, tmp_path, cells, "--select", "RNF003")
    assert data["cells"][1]["source"] == expected  # type: ignore[index]
    assert data["cells"][2]["source"][0] == "@torch.no_grad()\n"  # type: ignore[index]


def test_findings_left_after_fixing_have_the_written_cell_lines(run, tmp_path: Path) -> None:
    nb = tmp_path / "nb.ipynb"
    cells = [
        _code("import torch\n"),
        EVAL_CELL,  # gets a decorator: one line more in the module
        _code("x = 1\n", "torch.backends.cudnn.enabled = False\n"),  # RNF005: unsafe, left
    ]
    _write(nb, _nb(cells), indent=1, sort_keys=True)
    result = run("--select", "RNF003,RNF005", str(nb))
    assert result.exit_code == 1, result.output
    assert f"{nb}:cell 3:2:1: RNF005" in result.output
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["cells"][1]["source"][0] == "@torch.no_grad()\n"
