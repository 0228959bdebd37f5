"""The verify package must not import torch until it runs something:
``rnnfix --help`` and the codemod never pay for torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_importing_verify_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import rnnfix.verify, rnnfix.verify.cli, rnnfix.verify.runner, rnnfix.verify.rollback\n"
        "import rnnfix.verify.report\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
