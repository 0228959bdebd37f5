"""Cell sources spliced into a notebook's JSON text, every other byte kept."""

from __future__ import annotations

import json

import pytest

from rnnfix.source.notebook_json import source_spans, splice

ODD = """{
  "cells" : [
    {"cell_type": "markdown", "source": "# Title \u00e9"},
    {
      "cell_type": "code",
      "source": [
        "a = 1\\n",
        "b = 2"
      ],   "outputs": [
      ]
    },
    {"cell_type":"code","source":["x = 1\\n","y = 2"]},
    {"cell_type": "code", "source": "z = 3\\r\\n"}
  ],
  "nbformat": 4
}
"""


def test_spans_find_every_source() -> None:
    spans = source_spans(ODD)
    assert sorted(spans) == [0, 1, 2, 3]
    data = json.loads(ODD)
    for index, (start, end) in spans.items():
        assert json.loads(ODD[start:end]) == data["cells"][index]["source"]


@pytest.mark.parametrize(
    ("index", "value", "old", "new"),
    [
        (
            1,
            ["a = 1\n", "c = 0\n", "b = 2"],
            '"a = 1\\n",\n        "b = 2"',
            '"a = 1\\n",\n        "c = 0\\n",\n        "b = 2"',
        ),
        (2, ["x = 1\n", "w\n", "y = 2"], '"x = 1\\n","y = 2"', '"x = 1\\n","w\\n","y = 2"'),
        (3, "z = 4\r\n", '"z = 3\\r\\n"', '"z = 4\\r\\n"'),
    ],
)
def test_splice_keeps_the_layout(index: int, value: object, old: str, new: str) -> None:
    out = splice(ODD, {index: value})  # type: ignore[dict-item]
    assert out == ODD.replace(old, new)
    assert json.loads(out)["cells"][index]["source"] == value


def test_splice_of_a_cell_without_source_is_refused() -> None:
    assert splice('{"cells": [{"cell_type": "code"}]}', {0: "x"}) is None
    assert source_spans("{not json") == {}
