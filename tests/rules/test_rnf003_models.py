"""RNF003's model index: a builtin is never a model unless the file binds it."""

from __future__ import annotations

import ast

from rnnfix.analysis.context import FileContext
from rnnfix.rules.rnf003.models import ModelIndex


def _index(source: str, extra: set[str]) -> ModelIndex:
    return ModelIndex(FileContext(source=source, tree=ast.parse(source)), extra=extra)


def test_a_builtin_from_elsewhere_is_not_a_model() -> None:
    # fairseq/distributed/utils.py: ``int(os.environ["RANK"])`` was judged a forward
    source = "import os\n\ndef _infer_init(cfg):\n    cfg.rank = int(os.environ['RANK'])\n"
    assert _index(source, {"int", "model"}).models == frozenset({"model"})


def test_a_builtin_the_file_rebinds_may_be_a_model() -> None:
    source = "import torch\n\nint = torch.nn.Linear(2, 2)\nint.eval()\n"
    assert "int" in _index(source, {"int"}).models
