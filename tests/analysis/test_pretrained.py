"""Which loads transformers returns in eval mode (rnnfix.analysis.modes.pretrained)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.pretrained import transformers_load
from rnnfix.analysis.syntax.imports import ImportMap


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from transformers import AutoModel\nm = AutoModel.from_pretrained('x')", True),
        ("import transformers as tf\nm = tf.AutoModelForCausalLM.from_pretrained('x')", True),
        ("from transformers import BertModel\nm = BertModel.from_pretrained('x').to('cuda')", True),
        ("from transformers import AutoTokenizer\nm = AutoTokenizer.from_pretrained('x')", False),
        ("from transformers import AutoConfig\nm = AutoConfig.from_pretrained('x')", False),
        ("from asteroid.models import ConvTasNet\nm = ConvTasNet.from_pretrained('x')", False),
        ("from model import GPT\nm = GPT.from_pretrained('gpt2')", False),
        ("from peft import PeftModel\nm = PeftModel.from_pretrained(base, 'x')", False),
        ("from transformers import AutoModel\nm = AutoModel.from_config(cfg)", False),
    ],
)
def test_transformers_load(source: str, found: bool) -> None:
    tree = ast.parse(source)
    value = tree.body[-1].value  # type: ignore[attr-defined]
    assert (transformers_load(value, ImportMap.build(tree)) is not None) is found
