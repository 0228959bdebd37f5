"""Item 5: a rollback (``apply --verify``, ``verify --fix``) restores only a
file that still holds what rnnfix wrote; an edit saved while the command ran
is kept and reported."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from rnnfix.verify.rollback import EditedSinceWritten, restore_bytes, verify_and_rollback

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "verify" / "fix"


def test_restore_refuses_a_file_edited_since_it_was_written(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"x = 1  # the user's edit\n")
    with pytest.raises(EditedSinceWritten):
        restore_bytes(path, b"x = 0\n", written=b"x = 0\nmodel.train()\n")
    assert path.read_bytes() == b"x = 1  # the user's edit\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


def test_apply_verify_keeps_an_edit_saved_while_the_command_ran(tmp_path: Path) -> None:
    edited, untouched = tmp_path / "edited.py", tmp_path / "untouched.py"
    originals = {edited: b"a = 0\n", untouched: b"b = 0\n"}
    edited.write_bytes(b"a = 0\nfixed = 1\n")
    untouched.write_bytes(b"b = 0\nfixed = 1\n")
    # The command saves an edit to one file, then fails: a rollback is due.
    save = "open('edited.py', 'a').write('mine = 2\\n'); raise SystemExit(1)"
    result = verify_and_rollback(
        originals, [sys.executable, "-c", save], cwd=tmp_path, capture=True, timeout=60
    )
    assert not result.ok
    assert result.rolled_back == (str(untouched),)
    assert result.not_rolled_back == (str(edited),)
    assert untouched.read_bytes() == b"b = 0\n"
    assert edited.read_bytes() == b"a = 0\nfixed = 1\nmine = 2\n"

    from rnnfix.verify.report import format_text

    assert "not rolled back: 1 file(s) changed on disk" in format_text(result)


def test_verify_fix_keeps_an_edit_saved_during_the_proving_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rnnfix.config.settings import Settings
    from rnnfix.verify.fixloop import verify_fix

    script = tmp_path / "noop_train_override.py"
    shutil.copy(FIX / "noop_train_override.py", script)
    # At the top: the recording run stops at the first bug it sees.
    saves = (
        "import pathlib\n"
        "_runs = pathlib.Path(__file__).with_name('runs.txt')\n"
        "_n = int(_runs.read_text()) if _runs.exists() else 0\n"
        "_runs.write_text(str(_n + 1))\n"
        "if _n == 1:  # the proving run: the user saves the file meanwhile\n"
        "    with open(__file__, 'a') as _f:\n"
        "        _f.write('# saved by the user\\n')\n"
    )
    script.write_text(saves + script.read_text())
    report = verify_fix(
        [sys.executable, str(script)], settings=Settings(), cwd=tmp_path, capture=True, timeout=120
    )
    assert [o.status for o in report.outcomes] == ["not rolled back"], report.outcomes
    assert "changed on disk" in report.outcomes[0].why
    assert script.read_text().endswith("# saved by the user\n")
    assert report.exit_code == 1
