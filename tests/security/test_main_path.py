"""``python -m rnnfix`` inside a checkout never imports the checkout's
modules in place of the standard library's (issue 38, item 11): Python puts
the current folder first on ``sys.path``; ``rnnfix.__main__`` drops it, as
pip's ``__main__`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.conftest import BUGGY

from .conftest import run_rnnfix

ROOT = Path(__file__).resolve().parents[2]
# Modules rnnfix's package, its start and a run import (and some it may).
SHADOWS = [
    "json", "typing", "signal", "__future__", "re", "ast", "enum", "dataclasses",
    "pathlib", "tempfile", "hashlib", "tokenize", "click", "libcst", "tomllib", "fnmatch",
]  # fmt: skip


@pytest.mark.parametrize("args", [["check"], ["apply", "--diff"], ["--version"]])
def test_modules_in_the_current_folder_do_not_shadow_the_standard_library(
    tmp_path: Path, args: list[str]
) -> None:
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(
            f"import os\nos.write(2, b'SHADOWED: {name}\\n')\nos._exit(99)\n"
        )
    (tmp_path / "train.py").write_text(BUGGY)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RNNFIX_NO_CACHE": "1"}
    env.pop("PYTHONSAFEPATH", None)
    extra = [] if args == ["--version"] else ["--select", "RNF002", "train.py"]
    proc = run_rnnfix(*args, *extra, cwd=tmp_path, env=env)
    assert "SHADOWED" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    if args == ["check"]:
        assert proc.returncode == 1 and "train.py:4:1: RNF002" in proc.stdout


def test_a_checkout_run_from_its_own_root_still_imports_itself(tmp_path: Path) -> None:
    """Run in the repository's root (no PYTHONPATH): the package is found
    there first, and its own modules after the folder is dropped."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    f = tmp_path / "train.py"
    f.write_text(BUGGY)
    proc = run_rnnfix("check", "--no-cache", "--select", "RNF002", str(f), cwd=ROOT, env=env)
    assert proc.returncode == 1, proc.stderr
    assert "RNF002" in proc.stdout
