"""``verify --fix``'s planner on hand-made records (no torch, no run)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rnnfix.config.settings import Settings
from rnnfix.source.edits import InsertStatements, WrapInWith
from rnnfix.source.rewrite import apply_edits
from rnnfix.verify.fixplan import Planner
from rnnfix.verify.records import CUDNN_BACKWARD_IN_EVAL, Provenance, Record, Site

LOOP = """\
import torch

model = build()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in data:
        loss = model(x).sum()
        loss.backward()
        opt.step()
    evaluate(model)
model = torch.load("best.pt")
"""


def _record(
    file: str,
    call: list[tuple[int, str]],
    eval_site: list[tuple[int, str]],
    refs: list[tuple[str, ...]],
    backward: list[tuple[int, str]] = (),  # type: ignore[assignment]
    optimizers: tuple[str, ...] = ("SGD",),
    **extra: object,
) -> Record:
    prov = Provenance(
        model="Net",
        call=tuple(Site(file, line, fn) for line, fn in call),
        refs=tuple(refs),
        eval_site=tuple(Site(file, line, fn) for line, fn in eval_site),
        **extra,  # type: ignore[arg-type]
    )
    return Record(
        kind=CUDNN_BACKWARD_IN_EVAL,
        severity="error",
        message="",
        forward=prov.call,
        backward=tuple(Site(file, line, fn) for line, fn in backward),
        subject="LSTM",
        optimizers=optimizers,
        provenance=prov,
    )


def _plan(tmp_path: Path, source: str, record: Record, **settings: object) -> tuple[str, str]:
    path = tmp_path / "train.py"
    path.write_text(source)
    plan = Planner(tmp_path, Settings(**settings)).plan([record])  # type: ignore[arg-type]
    if not plan.fixes:
        return source, plan.unfixed[0].reason
    edits = [e for f in plan.fixes for e in f.edits]
    return apply_edits(source, edits), plan.fixes[0].description


def test_loop_head_at_module_level_despite_a_later_rebinding(tmp_path: Path) -> None:
    record = _record(
        "train.py", [(7, "<module>")], [(30, "evaluate"), (10, "<module>")], [("model",)]
    )
    fixed, description = _plan(tmp_path, LOOP, record)
    assert "for epoch in range(3):\n    model.train()\n    for x, y in data:" in fixed
    assert description == "insert `model.train()` at the head of the loop on line 5"


def test_name_rebound_later_in_the_same_loop_is_not_used(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        for epoch in range(3):
            for name in names:
                net = models[name]
                loss = net(x).sum()
                loss.backward()
            evaluate(models)
        """
    )
    record = _record("train.py", [(4, "<module>")], [(9, "evaluate"), (6, "<module>")], [("net",)])
    fixed, reason = _plan(tmp_path, source, record)
    assert fixed == source
    assert "no expression naming Net there is bound" in reason
    # A registry entry the run also saw is fine: ``models`` is bound before.
    both = _record(
        "train.py", [(4, "<module>")], [(9, "evaluate"), (6, "<module>")], [("net", 'models["a"]')]
    )
    source2 = "models = load()\n" + source
    both = _record(
        "train.py", [(5, "<module>")], [(9, "evaluate"), (7, "<module>")], [("net", 'models["a"]')]
    )
    fixed, _ = _plan(tmp_path, source2, both)
    assert 'for epoch in range(3):\n    models["a"].train()\n' in fixed


def test_function_start_when_an_earlier_call_left_eval_mode(tmp_path: Path) -> None:
    source = textwrap.dedent(
        '''\
        def run_epoch(model, data):
            """One epoch."""
            for x in data:
                model(x).sum().backward()
            model.eval()


        for epoch in range(3):
            run_epoch(net, data)
        '''
    )
    record = _record(
        "train.py",
        [(4, "run_epoch"), (9, "<module>")],
        [(5, "run_epoch"), (9, "<module>")],
        [("model",), ("net",)],
    )
    fixed, description = _plan(tmp_path, source, record)
    assert '"""One epoch."""\n    model.train()\n    for x in data:' in fixed
    assert description == "insert `model.train()` at the start of `run_epoch`"


def test_library_caller_and_missing_eval_are_reported(tmp_path: Path) -> None:
    record = _record(
        "train.py", [(7, "<module>")], [(10, "<module>")], [("model",)], user_call=False
    )
    assert "cannot edit" in _plan(tmp_path, LOOP, record)[1]
    record = _record("train.py", [(7, "<module>")], [], [("model",)])
    assert "no eval()/train(False) call" in _plan(tmp_path, LOOP, record)[1]


def test_input_gradient_is_rnf004_and_needs_rnn_only(tmp_path: Path) -> None:
    source = "model.eval()\nx.requires_grad_()\nscore = model(x).sum()\nscore.backward()\n"
    source = "model = build()\n" + source
    record = _record(
        "train.py",
        [(4, "<module>")],
        [(2, "<module>")],
        [("model",)],
        backward=[(5, "<module>")],
        optimizers=(),
        input_grad=True,
        rnn_path="enc.rnn",
    )
    assert "--rnn-only" in _plan(tmp_path, source, record)[1]
    fixed, _ = _plan(tmp_path, source, record, rnn_only=True)
    assert fixed == (
        "model = build()\nmodel.eval()\nx.requires_grad_()\nmodel.enc.rnn.train()\n"
        "score = model(x).sum()\nscore.backward()\n"
    )
    path = tmp_path / "train.py"
    plan = Planner(tmp_path, Settings(rnn_only=True, rnn_only_strategy="cudnn-off")).plan([record])
    assert isinstance(plan.fixes[0].edits[0], WrapInWith)
    fixed = apply_edits(source, list(plan.fixes[0].edits))
    assert "    score = model(x).sum()\n    score.backward()\n" in fixed
    assert "enabled=False" in fixed and path.read_text() == source
    # Inter-layer dropout: train mode would change the gradient.
    dropout = _record(
        "train.py",
        [(4, "<module>")],
        [(2, "<module>")],
        [("model",)],
        optimizers=(),
        input_grad=True,
        rnn_dropout=True,
    )
    assert "cudnn-off" in _plan(tmp_path, source, dropout, rnn_only=True)[1]


def test_no_optimizer_and_no_input_gradient_is_not_fixed(tmp_path: Path) -> None:
    record = _record("train.py", [(7, "<module>")], [(10, "<module>")], [("model",)], optimizers=())
    fixed, reason = _plan(tmp_path, LOOP, record, rnn_only=True)
    assert fixed == LOOP and "not fixed" in reason


def test_duplicate_records_make_one_fix(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LOOP)
    a = _record("train.py", [(7, "<module>")], [(30, "evaluate"), (10, "<module>")], [("model",)])
    b = _record("train.py", [(7, "<module>")], [(31, "evaluate"), (10, "<module>")], [("model",)])
    plan = Planner(tmp_path, Settings()).plan([a, b])
    assert len(plan.fixes) == 1 and len(plan.fixes[0].records) == 2
    assert isinstance(plan.fixes[0].edits[0], InsertStatements)


def test_evaluate_then_train_puts_train_before_the_training_loop(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        def main(model, data):
            baseline = evaluate(model, data)
            print(baseline)
            for x in data:
                model(x).sum().backward()
        """
    )
    record = _record(
        "train.py", [(5, "main"), (9, "<module>")], [(20, "evaluate"), (2, "main")], [("model",)]
    )
    fixed, description = _plan(tmp_path, source, record)
    assert "    print(baseline)\n    model.train()\n    for x in data:" in fixed
    assert description == "insert `model.train()` before line 4"
