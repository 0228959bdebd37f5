"""Property tests: whatever the program, rnnfix never crashes, never returns
code that does not parse, changes nothing where it finds nothing, converges
in one run, and leaves every statement it did not edit as it was.

Two sources of programs: ``hypothesmith`` (any valid Python, from the
grammar) and a generator of training-script shapes built from the parts the
fixtures use (models, optimizers, loops, helpers, classes, eval/train/no_grad
in random places). The example counts are small so CI stays fast; set
``RNNFIX_FUZZ_EXAMPLES=5000`` (or run ``bench/fuzz.py``) for a long run.
"""

from __future__ import annotations

import ast
import os

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source

LONG_RUN = "RNNFIX_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("RNNFIX_FUZZ_EXAMPLES", "30"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # CI sees the same examples on every run (no flakes); a long run explores.
    derandomize=not LONG_RUN,
    database=None if not LONG_RUN else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MODES = [
    Settings(),
    Settings(strict=True, unsafe_fixes=True),
    Settings(rnn_only=True, unsafe_fixes=True),
    Settings(rnn_only=True, rnn_only_strategy="cudnn-off", strict=True, unsafe_fixes=True),
]

# -- a generator of training-script shapes -----------------------------------

MODELS = ["model", "net", "self.model", "encoder", "critic"]
SIMPLE = [
    "{m}.eval()",
    "{m}.train()",
    "{m}.train(False)",
    "{m}.module.train()",
    "{m}.module.eval()",
    "was = {m}.training",
    "{m}.train(was)",
    "loss = criterion({m}(x), y)",
    "loss.backward()",
    "optimizer.step()",
    "optimizer.zero_grad()",
    "total += {m}(x).sum().item()",
    "out = {m}(x)",
    "x.requires_grad_()",
    "grads = torch.autograd.grad(out.sum(), x)",
    "torch.backends.cudnn.enabled = False",
    "print(evaluate({m}, loader))",
    "return total",
    "pass",
    "def forward_func(x):\n{i}    return {m}(x)",
    "run(forward_func, x)",
    "score = {m}(x)[:, 0].sum()",
    "score.backward()",
]
HEADERS = [
    "for x, y in loader:",
    "for epoch in range(3):",
    "with torch.no_grad():",
    "with torch.backends.cudnn.flags(enabled=False):",
    "if step % 10 == 0:",
    "while running:",
    "try:",
]
PRELUDE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4, num_layers=2, dropout=0.2)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.lstm(x)[0])


model = Net()
net = nn.DataParallel(Net())
encoder = nn.GRU(4, 4)
critic = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
criterion = nn.CrossEntropyLoss()
"""


def _block(draw: st.DrawFn, depth: int, indent: str) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        model = draw(st.sampled_from(MODELS))
        if depth < 3 and draw(st.booleans()):
            header = draw(st.sampled_from(HEADERS))
            lines.append(indent + header)
            lines += _block(draw, depth + 1, indent + "    ")
            if header == "try:":
                lines.append(indent + "finally:")
                lines.append(indent + f"    {model}.train()")
        else:
            stmt = draw(st.sampled_from(SIMPLE)).format(m=model, i=indent)
            lines.append(indent + stmt)
    return lines


@st.composite
def training_scripts(draw: st.DrawFn) -> str:
    parts = [PRELUDE]
    for name in draw(st.lists(st.sampled_from(["evaluate", "train_epoch", "predict"]), max_size=2)):
        decorator = draw(st.sampled_from(["", "@torch.no_grad()\n"]))
        body = _block(draw, 1, "    ")
        parts.append(f"\n{decorator}def {name}(model, loader):\n" + "\n".join(body) + "\n")
    if draw(st.booleans()):
        body = _block(draw, 2, "        ")
        parts.append(
            "\nclass Trainer:\n    def __init__(self, model):\n        self.model = model\n\n"
            "    def fit(self, loader, x, y):\n" + "\n".join(body) + "\n"
        )
    parts.append("\n" + "\n".join(_block(draw, 0, "")) + "\n")
    source = "".join(parts)
    try:
        compile(source, "<generated>", "exec")
    except SyntaxError:
        # `return` outside a function, `was` in a strange place: keep the
        # shape, drop what Python rejects.
        source = source.replace("\nreturn total", "\npass")
    return source


# -- the properties -------------------------------------------------------------


def _simple_statements(tree: ast.AST) -> list[tuple[int, str]]:
    return [
        (node.lineno, ast.dump(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt)
        and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not hasattr(node, "body")
    ]


def _is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def check_properties(source: str, mode: Settings) -> None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    try:
        result = fix_source(source, mode)
    except SyntaxError:
        return  # what ast.parse takes, rnnfix may still refuse with a reason
    # Output parses.
    fixed_tree = ast.parse(result.fixed)
    # Nothing found: byte-identical.
    if not result.initial and not result.applied:
        assert result.fixed == source
    # Converges: a second run changes nothing.
    again = fix_source(result.fixed, mode)
    assert again.fixed == result.fixed, "a second run changed the output"
    # Every statement it did not edit is still there, in the same order.
    edited = {f.line for f in result.initial} | {f.line for f in result.applied}
    before = [dump for line, dump in _simple_statements(tree) if line not in edited]
    after = [dump for _, dump in _simple_statements(fixed_tree)]
    assert _is_subsequence(before, after), "a statement rnnfix did not fix changed"


@pytest.mark.parametrize("mode", MODES, ids=["default", "strict", "rnn-only", "cudnn-off"])
@FUZZ
@given(source=training_scripts())
def test_training_script_shapes(source: str, mode: Settings) -> None:
    check_properties(source, mode)


@FUZZ
@given(source=hypothesmith.from_grammar())
def test_any_python_program(source: str) -> None:
    check_properties(source, Settings(strict=True, unsafe_fixes=True))
