"""RNF005 details and the ``RemoveStatement`` edit it relies on."""

from __future__ import annotations

import textwrap

from rnnfix.config.settings import Settings
from rnnfix.run.engine import check_source, fix_source
from rnnfix.source.edits import Pos, RemoveStatement
from rnnfix.source.rewrite import apply_edits

ONLY = ("RNF005",)

SALIENCY = """
import torch
import torch.nn as nn

SWITCH

def saliency(x):
    rnn = nn.LSTM(4, 4)
    rnn.eval()
    rnn(x)[0].sum().backward()
"""


def test_remove_statement_keeps_comments_and_fills_empty_blocks() -> None:
    src = "import torch\n# why\nx = 1  # gone\ny = 2\ndef f():\n    # c\n    z = 3\n"
    out = apply_edits(src, [RemoveStatement(Pos(3, 0)), RemoveStatement(Pos(7, 4))])
    assert out == "import torch\n# why\ny = 2\ndef f():\n    # c\n    pass\n"


def test_zero_and_alias_count_and_fix_is_unsafe() -> None:
    source = SALIENCY.replace("SWITCH", "import torch.backends.cudnn as cd\ncd.enabled = 0")
    (finding,) = check_source(source, Settings(select=ONLY))
    assert finding.fix is not None and not finding.fix.safe
    assert fix_source(source, Settings(select=ONLY)).fixed == source
    fixed = fix_source(source, Settings(unsafe_fixes=True)).fixed
    assert "cd.enabled" not in fixed
    # Spelled as the file imports it, so that import stays in use.
    assert "    with cd.flags(\n        enabled=False,\n        benchmark=cd.benchmark," in fixed
    assert check_source(fixed, Settings()) == []


def test_no_fix_without_an_eval_mode_rnn_backward() -> None:
    source = textwrap.dedent(
        """
        import torch
        def setup():
            torch.backends.cudnn.enabled = False
        """
    )
    (finding,) = check_source(source, Settings(select=ONLY, unsafe_fixes=True))
    assert finding.fix is None


def test_no_fix_when_a_region_cannot_be_wrapped() -> None:
    # The forward and the backward share a line with other statements.
    source = SALIENCY.replace("SWITCH", "torch.backends.cudnn.enabled = False").replace(
        "    rnn(x)[0].sum().backward()", "    y = 1; rnn(x)[0].sum().backward()"
    )
    (finding,) = check_source(source, Settings(select=ONLY, unsafe_fixes=True))
    assert finding.fix is None


def test_switch_restored_in_the_same_function_is_not_global() -> None:
    source = textwrap.dedent(
        """
        import torch
        def run():
            torch.backends.cudnn.enabled = False
            work()
            torch.backends.cudnn.enabled = True
        """
    )
    assert check_source(source, Settings(select=ONLY)) == []
