"""``grads.valueflow``: do a region's values reach a gradient use after it?"""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.grads.valueflow import ValueFlow, written


def _reaches(code: str) -> bool:
    """The region is the module's loop over ``val_loader``."""
    source = textwrap.dedent(code)
    tree = ast.parse(source)
    ctx = FileContext(source=source, tree=tree)
    region = next(
        s for s in ast.walk(tree) if isinstance(s, ast.For) and "val_loader" in ast.unparse(s.iter)
    )
    return ValueFlow(ctx).reaches_gradient_use([region], tree, written([region]))


def test_a_comprehension_variable_is_not_the_region_s_name() -> None:
    assert not _reaches(
        """
        for epoch in range(3):
            for batch in train_loader:
                data, _ = [_.cuda() for _ in batch]
                loss = model(data).sum()
                loss.backward()
            for batch in val_loader:
                data, _ = [_.cuda() for _ in batch]
                total = model(data).sum().item()
        """
    )


def test_a_comprehension_over_the_region_s_values_reads_them() -> None:
    assert _reaches(
        """
        for epoch in range(3):
            scores = []
            for x in val_loader:
                scores.append(model(x).mean())
            penalty = sum([s * s for s in scores])
            penalty.backward()
        """
    )


def test_a_name_read_in_a_comprehension_s_condition_is_read() -> None:
    assert _reaches(
        """
        for epoch in range(3):
            for x in val_loader:
                limit = model(x).mean()
            kept = [w for w in weights if w > limit]
            sum(kept).backward()
        """
    )


def test_the_back_edge_brings_a_value_past_a_binding_before_the_loop() -> None:
    assert _reaches(
        """
        target = None
        for epoch in range(3):
            loss = model(x).sum()
            if target is not None:
                loss = loss + (target - 1).sum()
            loss.backward()
            for batch in val_loader:
                target = model(batch)
        """
    )


def test_a_binding_before_the_use_in_the_loop_still_kills() -> None:
    assert not _reaches(
        """
        for epoch in range(3):
            target = torch.zeros(3)
            loss = (model(x) - target).sum()
            loss.backward()
            for batch in val_loader:
                target = model(batch)
        """
    )
