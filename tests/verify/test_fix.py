"""``rnnfix verify --fix``: run, see, fix, run again, keep only what is proven.

Real torch on the CPU; the scripts are tiny (a few batches of 3x5x4 tensors).
Each case costs two or three runs of the script, so there are few of them.
"""

from __future__ import annotations

import difflib
import json
import shutil
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rnnfix.config.settings import Settings  # noqa: E402
from rnnfix.verify.fixloop import FixReport, verify_fix  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
FIX = FIXTURES / "fix"


def _copy(tmp_path: Path, name: str, source: Path = FIX) -> Path:
    target = tmp_path / name
    shutil.copyfile(source / name, target)
    if name == "other_package.py":
        shutil.copytree(FIX / "vendor", tmp_path / "vendor")
    return target


def _fix(tmp_path: Path, script: Path, **kwargs: object) -> FixReport:
    return verify_fix(
        [sys.executable, script.name],
        cwd=tmp_path,
        capture=True,
        timeout=120,
        **kwargs,  # type: ignore[arg-type]
    )


def _added(before: str, after: str) -> list[str]:
    return [
        line[1:]
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="")
        if line.startswith("+") and not line.startswith("+++")
    ]


@pytest.mark.parametrize(
    ("name", "inserted", "before_line"),
    [
        # bugs static analysis cannot prove (``rnnfix apply`` leaves them)
        ("registry.py", ['        MODELS["tagger"].train()'], "        for x, y in data:"),
        (
            "trainer_callback.py",
            ["            self.model.train()"],
            "            for x, y in data:",
        ),
        ("other_package.py", ["    net.train()"], "    for x, y in data:"),
        (
            "registry_loop.py",
            ['            self.models["a"].train()', '            self.models["b"].train()'],
            "            for x in data:",
        ),
        # eval() at the end of the function: the next call trains in eval mode
        ("run_epoch.py", ["    model.train()"], "    for x, y in data:"),
    ],
)
def test_fixes_proves_and_is_idempotent(
    tmp_path: Path, name: str, inserted: list[str], before_line: str
) -> None:
    script = _copy(tmp_path, name)
    before = script.read_text()
    report = _fix(tmp_path, script)
    assert [o.status for o in report.outcomes] == ["proven"] * len(inserted), report.outcomes
    assert report.unfixed == []
    assert report.exit_code == 0
    assert len(report.runs) == 2 and report.runs[1].ok
    after = script.read_text()
    assert _added(before, after) == inserted
    lines = after.splitlines()
    assert lines[lines.index(inserted[-1]) + 1] == before_line
    fix = report.outcomes[0].fix
    assert fix.records and fix.records[0].optimizers  # evidence: which optimizer stepped it
    # Idempotent: the fixed script runs clean, nothing is written.
    again = _fix(tmp_path, script)
    assert again.outcomes == [] and again.unfixed == []
    assert again.exit_code == 0
    assert script.read_text() == after


def test_static_analysis_misses_these(tmp_path: Path) -> None:
    import rnnfix

    for name in ("registry.py", "trainer_callback.py", "other_package.py"):
        source = (FIX / name).read_text()
        result = rnnfix.fix(source)
        assert not result.changed and not result.initial, name
    # A registry written as a dict literal of built modules is a container of
    # models (issue 36.1): the static analysis reports the step in eval mode,
    # but cannot name the elements for a fix (no loop of the author's to
    # repeat); ``verify --fix`` names them through the registry.
    result = rnnfix.fix((FIX / "registry_loop.py").read_text())
    assert not result.changed
    assert [(f.code, f.fix) for f in result.initial] == [("RNF001", None)]


def test_correct_script_is_left_byte_identical(tmp_path: Path) -> None:
    script = _copy(tmp_path, "fixed_loop.py", FIXTURES)
    data = b"\xef\xbb\xbf" + script.read_bytes().replace(b"\n", b"\r\n")
    script.write_bytes(data)
    stamp = script.stat().st_mtime_ns
    report = _fix(tmp_path, script)
    assert report.outcomes == [] and report.unfixed == []
    assert report.exit_code == 0
    assert script.read_bytes() == data
    assert script.stat().st_mtime_ns == stamp


def test_fix_that_does_not_hold_is_rolled_back_byte_for_byte(tmp_path: Path) -> None:
    script = _copy(tmp_path, "noop_train_override.py")
    data = b"\xef\xbb\xbf# -*- coding: utf-8 -*-\r\n" + script.read_bytes().replace(b"\n", b"\r\n")
    script.write_bytes(data)
    report = _fix(tmp_path, script)
    assert [o.status for o in report.outcomes] == ["rolled back"]
    assert "still shows" in report.outcomes[0].why
    assert report.exit_code == 1
    assert script.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noop_train_override.py"]


def test_generated_code_is_reported_not_fixed(tmp_path: Path) -> None:
    script = _copy(tmp_path, "generated_call.py")
    data = script.read_bytes()
    report = _fix(tmp_path, script)
    assert report.outcomes == []
    assert len(report.unfixed) == 1
    assert "cannot edit" in report.unfixed[0].reason
    assert report.exit_code == 1
    assert script.read_bytes() == data


def test_deliberate_eval_gradient_needs_rnn_only(tmp_path: Path) -> None:
    script = _copy(tmp_path, "saliency.py", FIXTURES)
    data = script.read_bytes()
    report = _fix(tmp_path, script)
    assert report.outcomes == []
    assert "RNF004" in report.unfixed[0].reason and "--rnn-only" in report.unfixed[0].reason
    assert script.read_bytes() == data
    fixed = _fix(tmp_path, script, settings=Settings(rnn_only=True))
    assert [o.status for o in fixed.outcomes] == ["proven"]
    after = script.read_text()
    assert _added(data.decode(), after) == ["model.lstm.train()"]
    assert "model.lstm.train()\nscore = model(x)[:, 1].sum()" in after


def test_diff_writes_nothing(tmp_path: Path) -> None:
    script = _copy(tmp_path, "registry.py")
    data = script.read_bytes()
    report = _fix(tmp_path, script, write=False)
    assert [o.status for o in report.outcomes] == ["would apply"]
    assert '+        MODELS["tagger"].train()' in report.diff
    assert report.exit_code == 1
    assert len(report.runs) == 1
    assert script.read_bytes() == data


def test_gpu_stops_at_the_first_error_simulated(tmp_path: Path) -> None:
    """mode="raise" makes the CPU run die at the first backward, as real
    cuDNN does: the record written before the raise is enough to fix it."""
    script = _copy(tmp_path, "trainer_callback.py")
    report = _fix(tmp_path, script, mode="raise")
    first = report.runs[0]
    assert not first.finished  # the run died of the (emulated) cuDNN error
    assert [o.status for o in report.outcomes] == ["proven"]
    assert "self.model.train()" in script.read_text()


def test_cli_fix_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from rnnfix.cli.app import cli

    script = _copy(tmp_path, "registry.py")
    data = script.read_bytes()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["verify", "--fix", "--diff", "--json", "registry.py"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert out["written"] is False
    assert out["fixes"][0]["status"] == "would apply"
    assert out["fixes"][0]["evidence"][0].startswith("run-time evidence from")
    assert script.read_bytes() == data


def test_cli_diff_needs_fix() -> None:
    from click.testing import CliRunner

    from rnnfix.cli.app import cli

    result = CliRunner().invoke(cli, ["verify", "--diff", "train.py"])
    assert result.exit_code == 2
    assert "--diff needs --fix" in result.output


def test_records_of_every_process_merge_into_one_fix(tmp_path: Path) -> None:
    script = _copy(tmp_path, "spawn_ranks.py")
    report = _fix(tmp_path, script)
    assert [o.status for o in report.outcomes] == ["proven"], report
    fix = report.outcomes[0].fix
    processes = {p for r in fix.records for p in r.processes}
    assert {"rank 0", "rank 1"} <= processes
    assert _added((FIX / "spawn_ranks.py").read_text(), script.read_text()) == [
        "        model.train()"
    ]


def test_frozen_batchnorm_finetuning_is_not_undone(tmp_path: Path) -> None:
    script = _copy(tmp_path, "frozen_finetune.py")
    data = script.read_bytes()
    report = _fix(tmp_path, script)
    assert report.outcomes == []
    assert "frozen-BatchNorm fine-tuning" in report.unfixed[0].reason
    assert script.read_bytes() == data


def test_fix_that_breaks_the_run_is_rolled_back_gpu_simulated(tmp_path: Path) -> None:
    """The first run dies of the (emulated) cuDNN error, as on a GPU; the fix
    makes it die of something else: that is no excuse, the file goes back."""
    script = _copy(tmp_path, "train_needs_mode.py")
    data = script.read_bytes()
    report = _fix(tmp_path, script, mode="raise")
    assert not report.runs[0].finished
    assert [o.status for o in report.outcomes] == ["rolled back"]
    assert "the proving run failed" in report.outcomes[0].why
    assert "TypeError" in (report.runs[1].stderr or "")
    assert script.read_bytes() == data


def test_a_bug_hidden_by_the_first_error_gets_a_second_round(tmp_path: Path) -> None:
    """GPU simulated: the run stops at the first error; the proving run shows
    the next one, which a second round fixes and proves."""
    script = _copy(tmp_path, "two_models.py")
    before = script.read_text()
    report = _fix(tmp_path, script, mode="raise")
    assert [o.status for o in report.outcomes] == ["proven", "proven"], report.outcomes
    assert len(report.runs) == 3 and report.runs[-1].ok
    # The second round's train() goes before the loop's first statement,
    # which the first round's now is.
    assert _added(before, script.read_text()) == ["    critic.train()", "    encoder.train()"]
