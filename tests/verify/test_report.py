"""The verdict as text and JSON, built from records without running anything."""

from __future__ import annotations

import json

from rnnfix.verify.records import ProcessReport, Record, Site, merge_records
from rnnfix.verify.report import format_json, format_text
from rnnfix.verify.result import VerifyResult


def _result(records: list[Record], returncode: int = 0, **kw: object) -> VerifyResult:
    reports = [
        ProcessReport(pid=10, argv=["t.py"], mode="raise", rank="0", records=records[:1]),
        ProcessReport(pid=11, argv=["t.py"], mode="raise", rank="1", records=records),
    ]
    reports[0].rnn_forwards = reports[1].rnn_forwards = 4
    return VerifyResult(
        command=("python", "t.py"),
        returncode=returncode,
        timed_out=False,
        timeout_s=60.0,
        duration_s=1.5,
        mode="raise",
        until_clean_cycle=False,
        strict=bool(kw.get("strict", False)),
        records=tuple(merge_records(reports)),
        processes=tuple(reports),
    )


BUG = Record(
    "cudnn-backward-in-eval",
    "error",
    "a backward reached an LSTM ...",
    forward=(Site("model.py", 12, "forward"), Site("t.py", 30, "main")),
    backward=(Site("t.py", 31, "main"),),
    subject="LSTM",
    checked_by="emulated",
)
WARNING = Record("validation-forward", "warning", "grad enabled", forward=(Site("t.py", 40, "v"),))


def test_records_from_processes_are_merged() -> None:
    result = _result([BUG, WARNING], returncode=1)
    [bug] = result.errors
    assert bug.count == 2 and bug.processes == ("rank 0", "rank 1")
    assert result.records[0] is bug  # errors first


def test_text_verdict_says_what_where_and_how() -> None:
    text = format_text(_result([BUG], returncode=1))
    assert text.startswith("rnnfix verify: FAIL")
    assert "emulated on the CPU for 8 RNN forward(s)" in text
    assert "in 2 Python process(es)" in text
    assert "fail: the command exited with status 1" in text
    assert "backward at t.py:31; forward at model.py:12 <- t.py:30" in text
    assert "error: cudnn-backward-in-eval x2 [rank 0, rank 1]" in text


def test_warnings_fail_only_when_strict() -> None:
    assert _result([WARNING]).ok
    assert not _result([WARNING], strict=True).ok


def test_json_round_trips_records() -> None:
    data = json.loads(format_json(_result([BUG], returncode=1)))
    assert data["verdict"] == "fail" and data["exit_code"] == 1
    assert Record.from_json(data["records"][0]).key() == BUG.key()
