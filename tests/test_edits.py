"""The declarative edits, applied by libcst, keep every byte they do not touch."""

from __future__ import annotations

import pytest

from rnnfix.source.edits import (
    AddDecorator,
    AddImport,
    EditError,
    InsertStatements,
    Pos,
    ReplaceExpression,
    WrapInWith,
)
from rnnfix.source.rewrite import apply_edits


def test_insert_before_keeps_tabs_and_crlf() -> None:
    src = "for e in range(3):\r\n\tfor x in y:\r\n\t\tstep()\r\n"
    out = apply_edits(src, [InsertStatements(Pos(2, 1), ("model.train()",))])
    assert out == "for e in range(3):\r\n\tmodel.train()\r\n\tfor x in y:\r\n\t\tstep()\r\n"


def test_insert_after() -> None:
    src = "def f():\n    model.eval()\n    x = model(1)\n"
    out = apply_edits(src, [InsertStatements(Pos(2, 4), ("model.lstm.train()",), "after")])
    assert out == "def f():\n    model.eval()\n    model.lstm.train()\n    x = model(1)\n"


def test_wrap_reindents_in_file_style_and_keeps_comments() -> None:
    src = (
        "model.eval()\n"
        "# validation\n"
        "for x in val:  # loop\n"
        "    s = '''a\n"
        "b'''\n"
        "    total += model(x)\n"
        "print(total)\n"
    )
    out = apply_edits(src, [WrapInWith(Pos(3, 0), Pos(3, 0), "torch.no_grad()")])
    assert out == (
        "model.eval()\n"
        "# validation\n"
        "with torch.no_grad():\n"
        "    for x in val:  # loop\n"
        "        s = '''a\n"
        "b'''\n"  # string contents are never re-indented
        "        total += model(x)\n"
        "print(total)\n"
    )


def test_insert_and_wrap_same_statement_insert_goes_outside() -> None:
    src = "if True:\n  for x in val:\n    f(x)\n"
    out = apply_edits(
        src,
        [
            InsertStatements(Pos(2, 2), ("model.eval()",)),
            WrapInWith(Pos(2, 2), Pos(2, 2), "torch.no_grad()"),
        ],
    )
    assert (
        out == "if True:\n  model.eval()\n  with torch.no_grad():\n    for x in val:\n      f(x)\n"
    )


def test_replace_expression_keeps_arguments() -> None:
    src = "model.module.train(False)  # c\n"
    out = apply_edits(src, [ReplaceExpression(Pos(1, 0), Pos(1, 12), "model")])
    assert out == "model.train(False)  # c\n"


def test_add_decorator_innermost() -> None:
    src = "@dec\ndef g():\n    pass\n"
    out = apply_edits(src, [AddDecorator(Pos(2, 0), "torch.no_grad()")])
    assert out == "@dec\n@torch.no_grad()\ndef g():\n    pass\n"


def test_add_import_once() -> None:
    src = "import os\n\nx = 1\n"
    out = apply_edits(src, [AddImport("torch"), AddImport("torch")])
    assert out.count("import torch") == 1
    assert apply_edits("import torch\nx = 1\n", [AddImport("torch")]) == "import torch\nx = 1\n"


def test_duplicate_edits_apply_once() -> None:
    src = "for e in r:\n    step()\n"
    edit = InsertStatements(Pos(2, 4), ("model.train()",))
    assert apply_edits(src, [edit, edit]).count("model.train()") == 1


def test_unlocatable_edit_raises() -> None:
    with pytest.raises(EditError):
        apply_edits("x = 1\n", [InsertStatements(Pos(5, 0), ("y()",))])


def test_add_import_goes_after_environment_setup() -> None:
    src = 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport numpy as np\n\nx = 1\n'
    out = apply_edits(src, [AddImport("torch")])
    assert out == (
        'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\nimport numpy as np\n'
        "import torch\n\nx = 1\n"
    )


def test_add_import_joins_the_torch_imports() -> None:
    src = '"""Doc."""\nfrom __future__ import annotations\nimport torch.nn as nn\nimport os\n'
    out = apply_edits(src, [AddImport("torch")])
    assert out == (
        '"""Doc."""\nfrom __future__ import annotations\nimport torch.nn as nn\n'
        "import torch\nimport os\n"
    )
    assert apply_edits('"""Doc."""\n\nx = 1\n', [AddImport("torch")]) == (
        '"""Doc."""\nimport torch\n\nx = 1\n'
    )


def test_wrap_takes_the_enclosing_block_indent_step() -> None:
    src = "if x:\n\tpass\ndef f():\n    for x in val:\n        f(x)\n"
    out = apply_edits(src, [WrapInWith(Pos(4, 4), Pos(4, 4), "torch.no_grad()")])
    assert out == (
        "if x:\n\tpass\ndef f():\n    with torch.no_grad():\n        for x in val:\n"
        "            f(x)\n"
    )


def test_a_first_import_is_set_apart_from_the_code_after_it() -> None:
    """A file with no import gets its first one followed by the blank lines
    a formatter would put there: two before a definition, one before code."""
    src = "def evaluate(model, loader):\n    pass\n"
    out = apply_edits(src, [AddDecorator(Pos(1, 0), "torch.no_grad()"), AddImport("torch")])
    assert out == "import torch\n\n\n@torch.no_grad()\ndef evaluate(model, loader):\n    pass\n"
    assert apply_edits("x = 1\n", [AddImport("torch")]) == "import torch\n\nx = 1\n"
