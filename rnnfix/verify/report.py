"""Text and JSON renderings of a :class:`VerifyResult`."""

from __future__ import annotations

import json
from typing import Any

from rnnfix.verify.result import VerifyResult


def format_text(result: VerifyResult) -> str:
    lines = [f"rnnfix verify: {'PASS' if result.ok else 'FAIL'}", f"  {result.how()}"]
    lines.append(f"  outcome: {_outcome(result)}")
    for reason in result.failures():
        lines.append(f"  fail: {reason}")
    if result.rolled_back:
        lines.append(f"  rolled back {len(result.rolled_back)} file(s) to their original bytes:")
        lines.extend(f"    {path}" for path in result.rolled_back)
    if result.not_rolled_back:
        lines.append(
            f"  not rolled back: {len(result.not_rolled_back)} file(s) changed on disk since "
            "rnnfix wrote them (the edit is kept; undo rnnfix's fix by hand):"
        )
        lines.extend(f"    {path}" for path in result.not_rolled_back)
    for record in result.records:
        times = f" x{record.count}" if record.count > 1 else ""
        who = f" [{', '.join(record.processes)}]" if len(result.processes) > 1 else ""
        lines.append(f"  {record.severity}: {record.kind}{times}{who}")
        where = record.where()
        if where:
            lines.append(f"    {where}")
        lines.append(f"    {record.message}")
    return "\n".join(lines)


def _outcome(result: VerifyResult) -> str:
    took = f"after {result.duration_s:.1f} s"
    if result.stopped_after_clean_cycle and result.finished:
        return f"stopped after a clean train/eval/train/step cycle {took}"
    if result.timed_out:
        return f"killed at the time limit ({result.timeout_s:g} s)"
    if result.returncode == 0:
        return f"finished {took}"
    return f"exited with status {result.returncode} {took}"


def to_json(result: VerifyResult) -> dict[str, Any]:
    return {
        "verdict": "pass" if result.ok else "fail",
        "exit_code": result.exit_code,
        "failures": result.failures(),
        "how": result.how(),
        "command": list(result.command),
        "mode": result.mode,
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "timeout_s": result.timeout_s,
        "duration_s": round(result.duration_s, 3),
        "finished": result.finished,
        "stopped_after_clean_cycle": result.stopped_after_clean_cycle,
        "processes": len(result.processes),
        "rnn_forwards": result.rnn_forwards,
        "rnn_forwards_cuda": result.rnn_forwards_cuda,
        "rolled_back": list(result.rolled_back),
        "not_rolled_back": list(result.not_rolled_back),
        "records": [r.to_json() for r in result.records],
    }


def format_json(result: VerifyResult) -> str:
    return json.dumps(to_json(result), indent=2)
