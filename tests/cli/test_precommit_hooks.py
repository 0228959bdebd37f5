"""The pre-commit hooks hand notebooks too, and all files in one run."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_hooks() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((Path(__file__).parents[2] / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"rnnfix", "rnnfix-check"}
    for hook in hooks:
        assert hook["types_or"] == ["python", "jupyter"] and "types" not in hook
        # the cross-file analysis needs every file of the commit together
        assert hook["require_serial"] is True
        assert hook["entry"].startswith("rnnfix apply") and "--force-exclude" in hook["entry"]
