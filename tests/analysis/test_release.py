"""The analyses of a file leave no reference cycle behind: the mode flow, its
parts and scope runs (which hold the file's tree) are freed by reference
counting when the run drops them, not by the cyclic garbage collector (which,
on a cold run of the fine-tuning examples, spent a tenth of the CPU time
collecting a million tree nodes that such cycles held)."""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable, Iterator

import pytest

from rnnfix.analysis.project.summarise import summarise
from rnnfix.run.engine import check_source

TRAIN = """\
import torch


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        for x in loader:
            model(x)


def train(model, loader, opt):
    for epoch in range(3):
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
        evaluate(model, loader)
        if epoch > 1:
            model.train()


class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self, loader, opt):
        train(self.model, loader, opt)
        self.model.eval()
"""


@pytest.fixture
def garbage() -> Iterator[Callable[[], list[object]]]:
    """What the cyclic collector would have to free after the test's code."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)

    def collect() -> list[object]:
        gc.collect()
        found = list(gc.garbage)
        gc.garbage.clear()
        return found

    try:
        yield collect
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def _analyses(objects: list[object]) -> list[str]:
    """rnnfix's own objects and tree nodes among ``objects`` (a module-level
    cache of recent trees may keep this test's tree alive: its nodes then
    never show here, but the flow that held it does)."""
    return [
        type(o).__qualname__
        for o in objects
        if isinstance(o, ast.AST) or type(o).__module__.startswith("rnnfix.")
    ]


def test_checking_a_file_leaves_its_tree_to_reference_counting(
    garbage: Callable[[], list[object]],
) -> None:
    assert check_source(TRAIN, path="train.py")  # the mode flow ran (RNF001 reports)
    assert _analyses(garbage()) == []


def test_summarising_a_file_leaves_its_tree_to_reference_counting(
    garbage: Callable[[], list[object]],
) -> None:
    summary = summarise(TRAIN, "/tmp/train.py")
    assert summary is not None and summary.functions  # the summaries' mode flow ran
    assert _analyses(garbage()) == []
