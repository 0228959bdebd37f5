"""Test code is left alone by default (issue 17 item 3); --include-tests checks it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import BUGGY, FIXED

TEST_FILES = [
    "test_model.py",
    "model_test.py",
    "conftest.py",
    "tests/helpers.py",
    "pkg/test/util.py",
    "pkg/tests/deep/x.py",
]
CODE_FILES = ["train.py", "pkg/testing_utils.py", "pkg/contest.py", "pkg/latest/x.py"]


# A test function: `model_test.py` is test code by its name only when its text
# shows some (a `*_test.py` script with none is checked, see below).
TEST_TAIL = "\n\ndef test_model():\n    assert model is not None\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for rel in TEST_FILES + CODE_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(BUGGY + TEST_TAIL)
    return tmp_path


@pytest.fixture
def chdir(tmp_path: Path) -> Iterator[Path]:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def _changed(root: Path) -> set[str]:
    fixed = (FIXED, FIXED + TEST_TAIL)
    return {p.relative_to(root).as_posix() for p in root.rglob("*.py") if p.read_text() in fixed}


def test_test_files_in_folders_are_left_alone(run, project: Path) -> None:
    result = run(str(project))
    assert result.exit_code == 0, result.output
    assert _changed(project) == set(CODE_FILES)
    assert f"{len(CODE_FILES)} files checked" in result.output


def test_include_tests_flag(run, project: Path) -> None:
    result = run("--include-tests", str(project))
    assert result.exit_code == 0, result.output
    assert _changed(project) == set(TEST_FILES + CODE_FILES)


def test_include_tests_setting(run, project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.rnnfix]\ninclude-tests = true\n")
    result = run(str(project))
    assert result.exit_code == 0, result.output
    assert _changed(project) == set(TEST_FILES + CODE_FILES)
    result = run("--no-include-tests", "--check", str(project))
    assert f"{len(CODE_FILES)} files checked" in result.output


def test_folders_above_the_given_path_do_not_count(run, tmp_path: Path) -> None:
    # rnnfix's own checkout, or a user's project, may live below a folder named tests.
    root = tmp_path / "tests" / "project"
    root.mkdir(parents=True)
    (root / "train.py").write_text(BUGGY)
    result = run(str(root))
    assert result.exit_code == 0, result.output
    assert (root / "train.py").read_text() == FIXED


def test_a_folder_named_on_the_command_line_is_walked(run, tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "helpers.py").write_text(BUGGY)
    (tests / "test_x.py").write_text(BUGGY)
    result = run(str(tests))
    assert result.exit_code == 0, result.output
    assert (tests / "helpers.py").read_text() == FIXED
    assert (tests / "test_x.py").read_text() == BUGGY


def test_a_test_file_named_on_the_command_line_is_checked(run, project: Path) -> None:
    # As ruff and pytest do with a path you name; pre-commit uses --force-exclude.
    result = run(str(project / "test_model.py"), str(project / "tests" / "helpers.py"))
    assert result.exit_code == 0, result.output
    assert _changed(project) == {"test_model.py", "tests/helpers.py"}


def test_force_exclude_applies_to_named_files(run, project: Path, chdir: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.rnnfix]\nextend-exclude = ["pkg/latest/"]\n')
    named = [*TEST_FILES, *CODE_FILES]
    result = run("--force-exclude", *named)
    assert result.exit_code == 0, result.output
    assert _changed(project) == {"train.py", "pkg/testing_utils.py", "pkg/contest.py"}
    result = run("--force-exclude", "--include-tests", *TEST_FILES)
    assert _changed(project) == {*TEST_FILES, "train.py", "pkg/testing_utils.py", "pkg/contest.py"}


def test_force_exclude_setting(run, project: Path, chdir: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.rnnfix]\nforce-exclude = true\n")
    result = run("test_model.py", "train.py")
    assert result.exit_code == 0, result.output
    assert _changed(project) == {"train.py"}


TESTCASE_BASE = """\
import unittest


class ModelChecks(unittest.TestCase):
    pass
"""
TESTCASE_USER = """\
import torch

from checks import ModelChecks


class EvalChecks(ModelChecks):
    def _evaluate(self, model, loader):
        model.eval()
        outputs = []
        for x in loader:
            outputs.append(model(x))
        return outputs
"""


def test_testcase_base_class_in_another_file(run, tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(TESTCASE_BASE)
    (tmp_path / "evaluation.py").write_text(TESTCASE_USER)
    result = run("--select", "RNF003", "--check", str(tmp_path))
    assert result.exit_code == 0, result.output
    result = run("--select", "RNF003", "--check", "--include-tests", str(tmp_path))
    assert result.exit_code == 1, result.output
    assert "evaluation.py:7:5: RNF003" in result.output


def test_force_exclude_applies_to_named_folders(run, project: Path, chdir: Path) -> None:
    result = run("--force-exclude", "tests", "pkg/tests", "pkg/latest")
    assert result.exit_code == 0, result.output
    assert _changed(project) == {"pkg/latest/x.py"}
    assert "1 file checked" in result.output


# `*_test.py` is also how research code names evaluation scripts
# (CarperAI/trlx examples/summarize_rlhf/reward_model/gptj_reward_test.py, an
# accuracy run of a reward model; pyro examples/contrib/oed/ab_test.py, an
# experiment): with no test function or class and no test framework import,
# it is a script. Any sign of test code keeps it a test file.
@pytest.mark.parametrize(
    ("tail", "is_test"),
    [
        ("", False),
        ("\nif __name__ == '__main__':\n    print(model)\n", False),
        ("\nimport pytest\n", True),
        ("\nfrom unittest import mock\n", True),
        ("\n\nclass TestModel:\n    pass\n", True),
        ("\n\nclass Checks(TestCase):\n    pass\n", True),
        ("\n\ndef test(model, loader):\n    pass\n", True),
        ("\n\nasync def test_it():\n    pass\n", True),
    ],
)
def test_script_named_like_a_test(
    run, tmp_path: Path, chdir: Path, tail: str, is_test: bool
) -> None:
    for rel in ("gptj_reward_test.py", "pkg/ab_test.py", "test_named.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(BUGGY + tail)
    result = run(str(tmp_path))
    assert result.exit_code == 0, result.output
    # `test_*.py` is collected by pytest whatever it holds: always test code.
    scripts = set() if is_test else {"gptj_reward_test.py", "pkg/ab_test.py"}
    assert {
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*.py")
        if p.read_text() == FIXED + tail
    } == scripts
    # --force-exclude (pre-commit) reads the file the same way.
    for rel in ("gptj_reward_test.py", "pkg/ab_test.py"):
        (tmp_path / rel).write_text(BUGGY + tail)
    result = run("--force-exclude", "gptj_reward_test.py", "pkg/ab_test.py")
    assert result.exit_code == 0, result.output
    fixed = {
        rel
        for rel in ("gptj_reward_test.py", "pkg/ab_test.py")
        if (tmp_path / rel).read_text() == FIXED + tail
    }
    assert fixed == scripts


# NGCF's utility/batch_test.py: a test-named module that the training script
# imports (`from utility.batch_test import *`) and whose `def test(model, ...)`
# it calls is the program's evaluation code, asserts and all. A test-named
# module nothing of its folder or the folder above imports stays test code.
@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("from utility.batch_test import *\n", True),
        ("import utility.batch_test as bt\n", True),
        ("from utility import batch_test\n", True),
        ("# from utility.batch_test import *\nimport utility.other\n", False),
        ("", False),
    ],
)
def test_test_named_module_imported_by_code(
    run, tmp_path: Path, chdir: Path, importer: str, imported: bool
) -> None:
    (tmp_path / "utility").mkdir()
    (tmp_path / "main.py").write_text(importer + "print('train')\n")
    (tmp_path / "utility" / "batch_test.py").write_text(BUGGY + TEST_TAIL)
    (tmp_path / "utility" / "test_shapes.py").write_text(BUGGY + TEST_TAIL)
    result = run(str(tmp_path))
    assert result.exit_code == 0, result.output
    assert _changed(tmp_path) == ({"utility/batch_test.py"} if imported else set())
    assert ("2 files checked" if imported else "1 file checked") in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_imports_of_a_test_named_module_are_read_from_regular_files_only(
    run, tmp_path: Path, chdir: Path
) -> None:
    """Reading the neighbours of ``utility/batch_test.py`` for its importers
    never opens a FIFO (the read would block the run)."""
    (tmp_path / "utility").mkdir()
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / "utility" / "pipe.py")
    (tmp_path / "main.py").write_text("from utility.batch_test import *\n")
    (tmp_path / "utility" / "batch_test.py").write_text(BUGGY + TEST_TAIL)
    result = run(str(tmp_path))
    assert result.exit_code == 0, result.output
    for fifo in ("pipe.py", "utility/pipe.py"):
        (tmp_path / fifo).unlink()  # ``_changed`` reads every ``.py`` file
    assert _changed(tmp_path) == {"utility/batch_test.py"}
