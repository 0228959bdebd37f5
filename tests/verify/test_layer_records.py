"""Dropout and BatchNorm in train mode with grad disabled (validation without
``model.eval()``), and their intentional twins: MC dropout, frozen BatchNorm."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from torch import nn  # noqa: E402

from rnnfix.verify import sanitizer_layers as layers_module  # noqa: E402
from rnnfix.verify.cli import verify_command  # noqa: E402
from rnnfix.verify.records import (  # noqa: E402
    BATCHNORM_RECALIBRATION,
    FROZEN_BATCHNORM,
    MC_DROPOUT,
    VALIDATION_FORWARD,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"
HERE = Path(__file__).name


class Net(nn.Module):
    def __init__(self, norm: nn.Module | None = None, drop: nn.Module | None = None) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = norm if norm is not None else nn.Identity()
        self.drop = drop if drop is not None else nn.Identity()

    def forward(self, x: Any) -> Any:
        return self.drop(self.norm(self.lin(x)))  # LAYER-LINE


class ForcedDropout(nn.Module):
    def forward(self, x: Any) -> Any:
        return F.dropout(x, 0.3, training=True)


def _x() -> Any:
    return torch.randn(6, 4)


def _line(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(marker))


def _kinds(verify: Any) -> list[tuple[str, str, str]]:
    return sorted((r.kind, r.severity, r.subject) for r in verify.records())


def _validate(model: nn.Module, batches: int = 1) -> None:
    with torch.no_grad():
        for _ in range(batches):
            model(_x())  # VALIDATION-LINE


def test_dropout_validation_in_train_mode_is_one_warning_with_a_count(sanitizer: Any) -> None:
    model = Net(drop=nn.Dropout(0.5))
    _validate(model, batches=1000)
    [record] = sanitizer.records()
    assert (record.kind, record.severity, record.subject) == (
        VALIDATION_FORWARD,
        "warning",
        "Dropout",
    )
    assert record.count == 1000
    assert [(s.file.endswith(HERE), s.line) for s in record.forward[:2]] == [
        (True, _line("# LAYER-LINE")),
        (True, _line("# VALIDATION-LINE")),
    ]
    assert f"{HERE}:{_line('# LAYER-LINE')}" in record.message
    assert "model.eval()" in record.message and "RNF003" in record.message


def test_the_same_loop_after_eval_records_nothing(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.eval()
    _validate(model, batches=3)
    with torch.inference_mode():
        model(_x())
    assert sanitizer.records() == []


@pytest.mark.parametrize(
    "norm",
    [nn.BatchNorm1d(4), nn.SyncBatchNorm(4), nn.InstanceNorm1d(4, track_running_stats=True)],
    ids=lambda m: type(m).__name__,
)
def test_norm_validation_in_train_mode_is_a_warning(sanitizer: Any, norm: nn.Module) -> None:
    model = Net(norm=norm)
    x = torch.randn(6, 4, 5) if isinstance(norm, nn.InstanceNorm1d) else _x()
    model.lin = nn.Identity() if x.dim() == 3 else model.lin
    with torch.no_grad():
        for _ in range(2):
            model(x)
    [record] = sanitizer.records()
    assert (record.kind, record.severity) == (VALIDATION_FORWARD, "warning")
    assert record.subject == type(norm).__name__ and record.count == 2
    assert "updated running_mean/running_var" in record.message


def test_norms_without_running_stats_and_p0_dropout_record_nothing(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4, track_running_stats=False), nn.Dropout(0.0))
    _validate(model)
    with torch.no_grad():
        nn.InstanceNorm1d(4).train()(torch.randn(2, 4, 5))
    assert sanitizer.records() == []


@pytest.mark.parametrize(
    "drop",
    [nn.Dropout1d(0.2), nn.Dropout2d(0.2), nn.Dropout3d(0.2), nn.AlphaDropout(0.2)]
    + [nn.FeatureAlphaDropout(0.2), nn.Dropout(0.2, inplace=True)],
    ids=lambda m: repr(m),
)
def test_every_dropout_module_is_seen(sanitizer: Any, drop: nn.Module) -> None:
    shape = {nn.Dropout3d: (2, 3, 4, 4, 4), nn.Dropout2d: (2, 3, 4, 4)}.get(type(drop), (2, 3, 4))
    with torch.no_grad():
        drop(torch.randn(*shape))
    assert _kinds(sanitizer) == [(VALIDATION_FORWARD, "warning", type(drop).__name__)]


def test_training_forwards_record_nothing(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model.train()
        opt.zero_grad()
        model(_x()).sum().backward()
        opt.step()
        model.eval()
        _validate(model)
    assert sanitizer.records() == []


def test_mc_dropout_via_functional_training_true_is_info(sanitizer: Any) -> None:
    model = Net(drop=ForcedDropout()).eval()
    _validate(model, batches=2)
    with torch.no_grad():
        F.dropout(_x(), 0.5, training=True)  # outside any module
    assert _kinds(sanitizer) == [
        (MC_DROPOUT, "info", "F.dropout"),
        (MC_DROPOUT, "info", "ForcedDropout"),
    ]


def test_mc_dropout_via_dropout_train_in_eval_model_is_info(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.eval()
    model.drop.train()
    _validate(model, batches=4)
    [record] = sanitizer.records()
    assert (record.kind, record.severity, record.subject, record.count) == (
        MC_DROPOUT,
        "info",
        "Dropout",
        4,
    )
    assert "Monte Carlo" in record.message and "inside Net in eval mode" in record.message


def test_frozen_batchnorm_while_training_is_info(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.train()
    model.norm.eval()
    model(_x()).sum().backward()
    assert _kinds(sanitizer) == [(FROZEN_BATCHNORM, "info", "BatchNorm1d")]


def test_eval_model_with_grad_enabled_is_not_frozen_batchnorm(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5)).eval()
    model(_x()).sum().backward()  # saliency-style: eval mode, grad on
    assert sanitizer.records() == []


def test_batchnorm_recalibration_is_info(sanitizer: Any) -> None:
    from torch.optim.swa_utils import update_bn

    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    update_bn([_x(), _x()], model)  # train mode under no_grad, on purpose
    model.eval()
    model.norm.train()  # test-time adaptation of the statistics only
    _validate(model)
    # One record per call site (update_bn's and _validate's), infos only.
    assert _kinds(sanitizer) == [(BATCHNORM_RECALIBRATION, "info", "BatchNorm1d")] * 2
    assert sorted(r.count for r in sanitizer.records()) == [1, 2]


def test_data_parallel_own_flag_does_not_make_it_intentional(sanitizer: Any) -> None:
    wrapper = nn.DataParallel(Net(drop=nn.Dropout(0.5)))  # no CUDA: calls the module
    wrapper.eval()
    wrapper.module.train()  # DataParallel never reads its own flag: train mode runs
    _validate(wrapper)
    assert (VALIDATION_FORWARD, "warning", "Dropout") in _kinds(sanitizer)


def test_raise_mode_only_records(raising: Any) -> None:
    _validate(Net(nn.BatchNorm1d(4), nn.Dropout(0.5)))
    assert _kinds(raising) == [
        (VALIDATION_FORWARD, "warning", "BatchNorm1d"),
        (VALIDATION_FORWARD, "warning", "Dropout"),
    ]


def test_clean_paths_never_walk_the_stack(sanitizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def spy(name: str) -> Callable[..., Any]:
        real = getattr(layers_module, name)
        return lambda *a, **k: calls.append(name) or real(*a, **k)

    for name in ("_after_dropout", "_after_norm", "_stack_modules"):
        monkeypatch.setattr(layers_module, name, spy(name))
    test_training_forwards_record_nothing(sanitizer)
    assert calls == []  # train with grad on, eval under no_grad: one flag check each


def test_torchscript_still_compiles_the_layers(sanitizer: Any) -> None:
    scripted = torch.jit.script(nn.Sequential(nn.BatchNorm1d(4), nn.Dropout(0.5)))
    with torch.no_grad():
        scripted.eval()(_x())
    assert sanitizer.records() == []


def test_torch_compile_eager_backend_is_seen_once_per_call(sanitizer: Any) -> None:
    model = Net(nn.BatchNorm1d(4), nn.Dropout(0.5))
    compiled = torch.compile(model, backend="eager")
    with torch.no_grad():
        for _ in range(2):
            compiled(_x())
    records = sanitizer.records()
    assert {r.subject for r in records} == {
        "F.batch_norm in compiled Net",
        "F.dropout in compiled Net",
    }
    assert all(r.severity == "warning" for r in records)
    assert sum(r.count for r in records) == 4  # the fake-tensor trace is not counted


def _cli(*args: str) -> Any:
    return CliRunner().invoke(verify_command, list(args), catch_exceptions=False)


def test_verify_json_lists_the_records_and_passes_unless_strict() -> None:
    script = str(FIXTURES / "cnn_val_train_mode.py")
    result = _cli("--json", script)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    found = {(r["kind"], r["severity"], r["subject"]): r for r in data["records"]}
    assert set(found) == {
        (VALIDATION_FORWARD, "warning", "Dropout"),
        (VALIDATION_FORWARD, "warning", "BatchNorm2d"),
    }
    dropout = found[(VALIDATION_FORWARD, "warning", "Dropout")]
    assert dropout["count"] == 6  # 2 epochs x 3 batches, one record
    assert dropout["forward"][-1]["file"].endswith("cnn_val_train_mode.py")
    strict = _cli("--strict", script)
    assert strict.exit_code == 1
    assert "warning: validation-forward x6" in strict.output
    assert "(--strict)" in strict.output


def test_verify_mc_dropout_passes_even_when_strict() -> None:
    result = _cli("--strict", "--record", str(FIXTURES / "cnn_val_train_mode.py"), "--", "--mc")
    assert result.exit_code == 0, result.output
    assert "info: mc-dropout x6" in result.output
    assert "warning" not in result.output
