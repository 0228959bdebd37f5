"""RNF003 beyond the fixtures: region detection, the fixed point with RNF001,
and the choices the docs promise (``no_grad`` not ``inference_mode``, aliases,
pytest files)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.regions import data_is_eval
from rnnfix.config.settings import Settings
from rnnfix.rules import all_rules
from rnnfix.run.engine import check_source, fix_source

ONLY = Settings(select=("RNF003",))

EPOCHS = """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

model.train()
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    for x, y in val_loader:
        print(model(x).argmax(1))
"""


@pytest.mark.parametrize(
    "iterable",
    [
        "val_loader",
        "valid_dl",
        "testloader",
        "self.dev_batches",
        "loaders['val']",
        "enumerate(tqdm(eval_loader))",
        "holdout",
        "data.test",
        "valLoader",
    ],
)
def test_evaluation_data_names(iterable: str) -> None:
    assert data_is_eval(ast.parse(iterable, mode="eval").body)


@pytest.mark.parametrize(
    "iterable",
    [
        "train_loader",
        "['train', 'val']",
        "dataloaders[phase]",
        "latest",
        "devices",
        "train_val_loader",
        "contest_entries",
        "range(len(x))",
    ],
)
def test_not_evaluation_data_names(iterable: str) -> None:
    assert not data_is_eval(ast.parse(iterable, mode="eval").body)


def test_inserted_eval_reaches_a_fixed_point_with_rnf001() -> None:
    if "RNF001" not in all_rules():
        pytest.skip("RNF001 is not registered yet")
    result = fix_source(EPOCHS)
    codes = sorted(f.code for f in result.applied)
    assert codes == ["RNF001", "RNF003"]
    assert result.findings == []
    lines = [line.strip() for line in result.fixed.splitlines()]
    # eval() before validation, train() back at the head of the epoch loop.
    epoch = lines.index("for epoch in range(3):")
    assert lines[epoch + 1] == "model.train()"
    assert "model.eval()" in lines and "with torch.no_grad():" in lines
    again = fix_source(result.fixed)
    assert again.fixed == result.fixed and not again.applied and not again.findings


def test_rnf003_alone_leaves_train_to_rnf001() -> None:
    result = fix_source(EPOCHS, ONLY)
    assert [f.code for f in result.applied] == ["RNF003"]
    assert result.fixed.count("model.train()") == 1  # RNF001's job, not RNF003's


def test_uses_no_grad_never_inference_mode() -> None:
    result = fix_source(EPOCHS, ONLY)
    assert "inference_mode" not in result.fixed
    assert "with torch.no_grad():" in result.fixed


def test_adds_import_torch_only_when_needed() -> None:
    src = EPOCHS.replace("import torch\nfrom torch import nn\n", "from torch import nn, optim\n")
    src = src.replace("torch.optim.SGD", "optim.SGD")
    fixed = fix_source(src, ONLY).fixed
    assert fixed.count("import torch\n") == 1 and "with torch.no_grad():" in fixed
    # Under ``from torch import no_grad`` only eval() is missing: no import.
    src = src.replace("from torch import nn, optim", "from torch import nn, no_grad, optim")
    src = src.replace(
        "    for x, y in val_loader:\n        print(model(x).argmax(1))\n",
        "    with no_grad():\n"
        "        for x, y in val_loader:\n"
        "            print(model(x).argmax(1))\n",
    )
    fixed = fix_source(src, ONLY).fixed
    assert "import torch\n" not in fixed
    assert "        model.eval()\n        for x, y in val_loader:" in fixed


def test_pytest_files_are_not_evaluation_functions() -> None:
    src = (
        "import torch\nfrom torch import nn\n\n"
        "def test(model: nn.Module, x):\n    return model(x)\n"
    )
    assert [f.code for f in check_source(src, ONLY, path="train.py")] == ["RNF003"]
    assert check_source(src, ONLY, path="tests/test_model.py") == []


def test_ignore_comment_on_the_loop_line() -> None:
    src = EPOCHS.replace("in val_loader:", "in val_loader:  # rnnfix: ignore[RNF003]")
    result = fix_source(src, ONLY)
    assert result.fixed == src and not result.findings


def test_crlf_and_comments_survive() -> None:
    src = EPOCHS.replace(
        "    for x, y in val_loader:", "    # validate\n    for x, y in val_loader:"
    )
    src = src.replace("\n", "\r\n")
    fixed = fix_source(src, ONLY).fixed
    assert "\r\n" in fixed and "\n" not in fixed.replace("\r\n", "")
    assert "    # validate\r\n    model.eval()\r\n    with torch.no_grad():\r\n" in fixed


def test_train_inside_the_region_is_reported_not_fixed() -> None:
    src = EPOCHS.replace(
        "        print(model(x).argmax(1))\n",
        "        print(model(x).argmax(1))\n        model.train()\n",
    )
    findings = check_source(src, ONLY)
    assert len(findings) == 1 and findings[0].fix is None
    assert "not fixed" in findings[0].message


def test_findings_point_at_the_region() -> None:
    (finding,) = check_source(EPOCHS, ONLY)
    assert (finding.line, finding.col) == (13, 5)
    assert finding.fix is not None and finding.fix.safe


# --- results that leave the function (issue 16, item 1) -----------------------
EVALUATE = """\
import torch
from torch import nn


def evaluate(model: nn.Module, loader{extra}):
    {body}
"""


@pytest.mark.parametrize(
    "body",
    [
        "return [model(x).argmax(-1) for x in loader]",
        "return sum(model(x).sum().item() for x in loader)",
        "return [float(model(x).mean()) for x in loader]",
        "return [(model(x) > 0).tolist() for x in loader]",
        "return [model(x).detach() for x in loader]",
        "return [model(x).shape for x in loader]",
    ],
)
def test_results_without_a_graph_may_leave(body: str) -> None:
    (finding,) = check_source(EVALUATE.format(extra="", body=body), ONLY)
    assert finding.fix is not None


@pytest.mark.parametrize(
    ("extra", "body", "how"),
    [
        ("", "return [model(x) for x in loader]", "returned"),
        ("", "for x in loader:\n        yield model(x).softmax(-1)", "yielded"),
        (", out", "for x in loader:\n        out.append(model(x))", "stored in `out`"),
        (", cb", "for x in loader:\n        cb(model(x))", "passed to callback `cb`"),
        (", state", "for x in loader:\n        state.last = model(x)", "stored on `state.last`"),
    ],
)
def test_results_with_a_graph_leaving_are_reported_not_fixed(
    extra: str, body: str, how: str
) -> None:
    (finding,) = check_source(EVALUATE.format(extra=extra, body=body), ONLY)
    assert finding.fix is None
    assert f"what it computes is {how}" in finding.message
    assert "has no caller in this file" in finding.message


def test_a_caller_that_differentiates_the_result_blocks_the_fix() -> None:
    src = EVALUATE.format(extra="", body="return [model(x) for x in loader]") + (
        "\n\ndef main(model, loader):\n"
        "    preds = evaluate(model, loader)\n"
        "    print(len(preds))\n"
        "    torch.stack(preds).sum().backward()\n"
    )
    assert check_source(src, ONLY) == []


def test_a_caller_that_returns_the_result_blocks_the_fix() -> None:
    src = EVALUATE.format(extra="", body="return [model(x) for x in loader]") + (
        "\n\ndef predictions(model, loader):\n    return evaluate(model, loader)\n"
    )
    (finding,) = check_source(src, ONLY)
    assert finding.fix is None and "passes it on" in finding.message


def test_a_function_passed_as_a_value_has_callers_rnnfix_does_not_see() -> None:
    src = EVALUATE.format(extra="", body="return [model(x) for x in loader]") + (
        "\n\nhooks = {'eval': evaluate}\nprint(evaluate(model, loader))\n"
    )
    (finding,) = check_source(src, ONLY)
    assert finding.fix is None and "passed on as a value" in finding.message


def test_nested_forward_converges_in_one_pass() -> None:
    src = (
        "import torch\nfrom torch.nn import Module\n\n\n"
        "def evaluate(model: Module, xs):\n"
        "    def forward_func(x):\n        return model(x)\n\n"
        "    for x in xs:\n        run(forward_func, x)\n"
    )
    once = fix_source(src, ONLY)
    assert once.fixed.count("@torch.no_grad()") == 1 and once.fixed.count("model.eval()") == 1
    assert check_source(once.fixed, ONLY) == []


def test_leftover_train_after_the_evaluations_own_eval_becomes_eval() -> None:
    src = EPOCHS.replace(
        "    for x, y in val_loader:\n",
        "    model.eval()\n    for x, y in val_loader:\n        model.train()\n",
    )
    fixed = fix_source(src, ONLY).fixed
    assert "model.eval()\n            print(model(x).argmax(1))" in fixed
    assert "model.train()" not in fixed.split("val_loader")[-1]


def test_train_as_the_evaluations_only_mode_call_is_reported_not_fixed() -> None:
    # Issue 27: train mode may be chosen (BatchNorm at batch size 1, MC dropout).
    src = EPOCHS.replace(
        "    for x, y in val_loader:\n",
        "    for x, y in val_loader:\n        model.train()\n",
    )
    result = fix_source(src, ONLY)
    assert result.fixed == src
    (finding,) = check_source(src, ONLY)
    assert finding.fix is None
    assert "only mode call" in finding.message and "Monte Carlo dropout" in finding.message


def test_a_wrapper_around_one_forward_does_not_cover_another() -> None:
    src = """\
import torch
from torch import nn


def validate(model: nn.Module, val_loader):
    model.eval()
    for x, y in val_loader:
        with torch.no_grad():
            a = model(x).argmax(1)
        b = model(y).argmax(1)
        print((a == b).sum().item())
"""
    (finding,) = check_source(src, ONLY)
    assert "grad enabled" in finding.message


def test_an_unknown_context_manager_around_evaluation_leaves_it_alone() -> None:
    src = EPOCHS.replace(
        "    for x, y in val_loader:\n        print(model(x).argmax(1))\n",
        "    with ema.average_parameters():\n"
        "        for x, y in val_loader:\n            print(model(x).argmax(1))\n",
    )
    assert check_source(src, ONLY) == []
