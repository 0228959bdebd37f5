"""``verify --fix``: every mode bug the run saw is fixed, or reported as not
fixed with the reason (issue 25, item 4): a validation forward in train mode,
which it does not edit, is named in the report, not left for a later plain
``verify`` to warn about."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from rnnfix.verify.fixloop import verify_fix  # noqa: E402
from rnnfix.verify.fixreport import format_fix_text  # noqa: E402

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "verify" / "fix"


def test_a_bug_it_does_not_edit_is_reported_with_its_reason(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    shutil.copyfile(FIX / "validation_left.py", script)
    report = verify_fix([sys.executable, script.name], cwd=tmp_path, capture=True, timeout=120)
    assert [o.status for o in report.outcomes] == ["proven"]
    [unfixed] = report.unfixed
    assert unfixed.record.kind == "validation-forward"
    assert "RNF003" in unfixed.reason
    text = format_fix_text(report)
    assert "1 fix(es) proven, 1 reported, not fixed" in text
    assert "reported, not fixed: validation-forward (Dropout)" in text
    assert "ran in train mode with grad disabled" in text  # the sanitizer's words
    assert "ran forward in eval mode" not in text.split("reported, not fixed:")[1]
    # A warning reported is no failure, as for a plain ``verify``.
    assert report.exit_code == 0
