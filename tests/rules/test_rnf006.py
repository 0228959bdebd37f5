"""RNF006 details: loader functions, selection, and no double report with RNF003."""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.modes.loads import LOADER, MODULE_LOADER, NOT_A_LOADER, returns_loaded_model
from rnnfix.analysis.project.summarise import summarise
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.config.settings import Settings
from rnnfix.run.engine import check_source, fix_source

SCRIPT = """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
model.load_state_dict(torch.load("m.pt"))
print(model(torch.load("x.pt")))
"""


def _loader(source: str) -> int:
    tree = ast.parse(textwrap.dedent(source))
    func = tree.body[-1]
    return returns_loaded_model(
        func, ImportMap.build(tree).qualname, lambda v: isinstance(v, ast.Call)
    )


def test_loader_functions() -> None:
    assert (
        _loader("""
        import torch
        def load(p):
            m = Net()
            m.load_state_dict(torch.load(p))
            return m.to("cpu")
        """)
        == MODULE_LOADER
    )
    assert (
        _loader("""
        import torch
        def load(p):
            return_value = torch.load(p)["model"]
            return return_value
        """)
        == LOADER
    )
    # The helper sets the mode itself, or returns another object on some path.
    for body in (
        "m = Net(); m.load_state_dict(torch.load(p)); return m.eval()",
        "m = Net(); m.load_state_dict(torch.load(p)); m.eval(); return m",
        "m = Net()\n    if p: m.load_state_dict(torch.load(p))\n"
        "    else: m = other(p)\n    return m",
        "m = Net(); opt = Adam(); opt.load_state_dict(torch.load(p)); return m",
    ):
        assert _loader(f"import torch\ndef load(p):\n    {body}\n") == NOT_A_LOADER, body


def test_project_summary_records_loaders() -> None:
    source = textwrap.dedent("""
        import torch
        from torch import nn

        def load_model(path):
            model = nn.Linear(2, 2)
            model.load_state_dict(torch.load(path))
            return model
    """)
    summary = summarise(source, "/p/utils.py")
    assert summary is not None and summary.loaders == {"load_model": True}


def test_select_alone_and_no_double_report_with_rnf003() -> None:
    (finding,) = check_source(SCRIPT, Settings(select=("RNF006",)))
    assert finding.code == "RNF006" and finding.fix is not None and finding.fix.safe
    assert check_source(SCRIPT, Settings(ignore=("RNF006",))) == []
    # An evaluation function is RNF003's, fixed or not: one finding per forward.
    source = SCRIPT.replace(
        'print(model(torch.load("x.pt")))',
        "def evaluate(net, xs):\n    return sum(net(x).argmax().item() for x in xs)\n"
        'print(evaluate(model, torch.load("x.pt")))',
    )
    codes = [f.code for f in check_source(source, Settings())]
    assert codes.count("RNF006") == 0, codes


def test_fix_converges_and_is_idempotent() -> None:
    fixed = fix_source(SCRIPT, Settings()).fixed
    assert "model.eval()" in fixed and "with torch.no_grad():" in fixed
    assert fix_source(fixed, Settings()).fixed == fixed
    assert check_source(fixed, Settings()) == []


def test_test_named_script_is_inference_code_but_a_test_module_is_not() -> None:
    # ``python test_image.py``: a script named like a test, with no test in it.
    (finding,) = check_source(SCRIPT, Settings(select=("RNF006",)), "test_image.py")
    assert finding.fix is not None
    assert fix_source(SCRIPT, Settings(), "test_image.py").fixed != SCRIPT
    # The same lines in a pytest module (a test function, a pytest import),
    # or in a ``*_test.py`` with test code: test code, left alone.
    for source, name in (
        (SCRIPT + "\n\ndef test_runs():\n    assert model is not None\n", "test_image.py"),
        ("import pytest\n" + SCRIPT, "test_image.py"),
        (SCRIPT + "\n\nclass TestModel:\n    pass\n", "model_test.py"),
    ):
        assert check_source(source, Settings(select=("RNF006",)), name) == [], source
        assert fix_source(source, Settings(), name).fixed == source


def test_checkpoint_helpers_that_load_into_a_parameter() -> None:
    from rnnfix.analysis.modes.loads import loads_into_param

    def found(body: str) -> tuple[int, str] | None:
        tree = ast.parse(f"import torch\ndef load_checkpoint(path, model, opt=None):\n{body}\n")
        return loads_into_param(tree.body[-1])

    assert found("    model.load_state_dict(torch.load(path)['model'])") == (1, "model")
    assert found("    model.module.load_state_dict(torch.load(path))") == (1, "model")
    # Sets the mode itself, trains, loads into two objects or into none given.
    assert found("    model.load_state_dict(torch.load(path))\n    model.eval()") is None
    assert found("    model.load_state_dict(torch.load(path))\n    opt.step()") is None
    both = "    model.load_state_dict(torch.load(path))\n    opt.load_state_dict(torch.load(path))"
    assert found(both) is None
    assert found("    net = Net()\n    net.load_state_dict(torch.load(path))") is None
