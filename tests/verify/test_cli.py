"""``rnnfix verify`` as a click command: arguments, launchers, JSON, exit codes."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from rnnfix.verify import cli as verify_cli  # noqa: E402
from rnnfix.verify.cli import TORCH_MISSING, verify_command  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"


def test_json_verdict_for_saliency_in_eval_mode() -> None:
    script = str(FIXTURES / "saliency.py")
    result = CliRunner().invoke(verify_command, ["--json", script, "--", "--unused", "2"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["verdict"] == "fail"
    assert data["records"][0]["kind"] == "cudnn-backward-in-eval"
    assert data["records"][0]["forward"][-1]["file"].endswith("saliency.py")
    assert data["command"][1:] == [script, "--unused", "2"]


def test_saliency_with_rnn_only_fix_passes() -> None:
    result = CliRunner().invoke(
        verify_command, [str(FIXTURES / "saliency_rnn_only.py")], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("rnnfix verify: PASS")
    assert "emulated on the CPU" in result.output


def test_nothing_to_run_is_a_usage_error() -> None:
    result = CliRunner().invoke(verify_command, [])
    assert result.exit_code == 2


def test_missing_torch_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = verify_cli.importlib.util.find_spec
    monkeypatch.setattr(
        verify_cli.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )
    result = CliRunner().invoke(verify_command, [str(FIXTURES / "fixed_loop.py")])
    assert result.exit_code == 2
    assert TORCH_MISSING in result.output
    assert TORCH_MISSING == "rnnfix verify needs torch: pip install 'rnnfix[verify]'"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_torchrun_children_are_verified() -> None:
    torchrun = Path(sys.executable).parent / "torchrun"
    launcher = (
        [str(torchrun)] if torchrun.exists() else [sys.executable, "-m", "torch.distributed.run"]
    )
    args = [
        "--json",
        "--timeout",
        "120",
        "--",
        *launcher,
        "--nnodes=1",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={_free_port()}",
        str(FIXTURES / "ddp_buggy.py"),
    ]
    result = CliRunner().invoke(verify_command, args, catch_exceptions=False)
    data = json.loads(result.output)
    workers = [r for r in data["records"] if r["kind"] == "cudnn-backward-in-eval"]
    if not workers and data["rnn_forwards"] == 0:
        pytest.skip(f"torchrun could not start two gloo workers here: {data['failures']}")
    assert result.exit_code == 1
    assert data["verdict"] == "fail"
    assert set(workers[0]["processes"]) <= {"rank 0", "rank 1"} and workers[0]["processes"]
    assert workers[0]["forward"][-1]["file"].endswith("ddp_buggy.py")
