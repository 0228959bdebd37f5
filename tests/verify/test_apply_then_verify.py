"""`rnnfix apply` fixes, then the sanitizer proves the fix (needs the engine)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from rnnfix.verify.runner import command_from_words, run_verify  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "verify"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rnnfix.run.engine") is None
    or importlib.util.find_spec("rnnfix.__main__") is None,
    reason="rnnfix.run.engine / `python -m rnnfix` not available yet (issues RNF001/RNF004)",
)


def _apply(path: Path, *options: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", *options, str(path)],
        env=env,
        check=False,
        capture_output=True,
    )


@pytest.mark.parametrize(
    ("fixture", "options"), [("buggy_loop.py", ()), ("saliency.py", ("--rnn-only",))]
)
def test_apply_fix_passes_verify(tmp_path: Path, fixture: str, options: tuple[str, ...]) -> None:
    path = tmp_path / fixture
    shutil.copy(FIXTURES / fixture, path)
    # The fixtures fail unfixed: test_runner and test_cli show it.
    _apply(path, *options)
    assert path.read_bytes() != (FIXTURES / fixture).read_bytes(), "apply changed nothing"
    after = run_verify(command_from_words([str(path)]), capture=True, timeout=60)
    assert after.ok, after.stderr
