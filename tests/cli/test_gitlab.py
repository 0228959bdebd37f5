"""``--output-format gitlab`` (GitLab Code Quality) and the GitLab CI template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli

BUGGY = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"


def report(tmp_path: Path, text: str) -> list[dict[str, object]]:
    (tmp_path / "a.py").write_text(text)
    result = CliRunner().invoke(
        cli, ["apply", "--no-cache", "-q", "--check", "--output-format", "gitlab", str(tmp_path)]
    )
    data: list[dict[str, object]] = json.loads(result.output)
    return data


def test_issues(tmp_path: Path) -> None:
    (issue,) = report(tmp_path, BUGGY)
    assert issue["check_name"] == "RNF002" and issue["severity"] == "major"
    assert str(issue["description"]).startswith("RNF002: ")
    assert issue["location"] == {"path": str(tmp_path / "a.py"), "lines": {"begin": 4, "end": 4}}


def test_fingerprints_survive_moved_lines_and_tell_equals_apart(tmp_path: Path) -> None:
    (before,) = report(tmp_path, BUGGY)
    (after,) = report(tmp_path, "# a new first line\n" + BUGGY)
    assert before["fingerprint"] == after["fingerprint"]
    twice = report(tmp_path, BUGGY + "model.module.train()\n")
    assert len({i["fingerprint"] for i in twice}) == 2


def test_clean_is_an_empty_list(tmp_path: Path) -> None:
    assert report(tmp_path, "x = 1\n") == []


def test_template() -> None:
    yaml = pytest.importorskip("yaml")
    template = Path(__file__).parents[2] / "templates" / "rnnfix.gitlab-ci.yml"
    job = yaml.safe_load(template.read_text())["rnnfix"]
    assert "--output-format gitlab" in job["script"][0]
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
