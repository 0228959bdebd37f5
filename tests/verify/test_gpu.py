"""On real cuDNN: the sanitizer's verdict matches what cuDNN did.

Runs the buggy and the hand-fixed loop three ways: plain on CUDA (cuDNN
decides), under the sanitizer on CUDA (cuDNN decides, the sanitizer records)
and under the sanitizer on the CPU (the emulation decides).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rnnfix.verify.runner import run_verify, script_command  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
CUDNN_ERROR = "cudnn RNN backward can only be called in training mode"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not (torch.cuda.is_available() and torch.backends.cudnn.is_available()),
        reason="needs CUDA and cuDNN",
    ),
]


@pytest.mark.parametrize(
    ("script", "cudnn_fails"), [("buggy_loop.py", True), ("fixed_loop.py", False)]
)
def test_sanitizer_verdict_matches_cudnn(script: str, cudnn_fails: bool) -> None:
    path = str(FIXTURES / script)
    plain = subprocess.run(
        [sys.executable, path, "--device", "cuda"], capture_output=True, text=True, timeout=300
    )
    real_failed = plain.returncode != 0 and CUDNN_ERROR in plain.stderr
    assert real_failed is cudnn_fails, plain.stderr[-2000:]

    on_gpu = run_verify(script_command(path, ["--device", "cuda"]), capture=True, timeout=300)
    on_cpu = run_verify(script_command(path, ["--device", "cpu"]), capture=True, timeout=300)
    assert (not on_gpu.ok) is real_failed, on_gpu.stderr
    assert (not on_cpu.ok) is real_failed, on_cpu.stderr
    assert on_gpu.rnn_forwards_cuda > 0
    if cudnn_fails:
        assert CUDNN_ERROR in (on_gpu.stderr or "")  # cuDNN's own error, not ours
        assert {r.checked_by for r in on_gpu.errors if r.kind == "cudnn-backward-in-eval"} == {
            "cudnn"
        }
        assert {r.checked_by for r in on_cpu.errors if r.kind == "cudnn-backward-in-eval"} == {
            "emulated"
        }
        [gpu_record] = [r for r in on_gpu.errors if r.kind == "cudnn-backward-in-eval"]
        [cpu_record] = [r for r in on_cpu.errors if r.kind == "cudnn-backward-in-eval"]
        assert gpu_record.forward == cpu_record.forward
        assert gpu_record.backward == cpu_record.backward


def test_fix_on_real_cudnn(tmp_path: Path) -> None:
    """Real cuDNN raises at the first eval-mode backward and ends the run:
    the record the sanitizer took before the raise is enough to fix it, and
    the proving run on CUDA passes."""
    from rnnfix.verify.fixloop import verify_fix

    script = tmp_path / "buggy_loop.py"
    script.write_bytes((FIXTURES / "buggy_loop.py").read_bytes())
    report = verify_fix(
        [sys.executable, script.name, "--device", "cuda"], cwd=tmp_path, capture=True, timeout=300
    )
    first = report.runs[0]
    assert not first.finished and CUDNN_ERROR in (first.stderr or "")
    assert first.errors and first.errors[0].checked_by == "cudnn"
    assert [o.status for o in report.outcomes] == ["proven"]
    assert "        model.train()\n        for x, y in data:" in script.read_text()
    assert report.runs[-1].ok
