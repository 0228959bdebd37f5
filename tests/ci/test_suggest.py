"""Suggestion ranges from difflib, commentable lines from a PR's hunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from rnnfix.ci.prdiff import commentable_lines, pr_files
from rnnfix.ci.suggest import Change, changes, patch, split


def test_replace_spanning_lines() -> None:
    (c,) = changes("f.py", "a\nb\nc\nd\n", "a\nB\nC\nd\n")
    assert (c.start, c.end, c.new) == (2, 3, ["B\n", "C\n"])
    assert c.comment()["start_line"] == 2 and c.comment()["line"] == 3


def test_insertion_anchors_on_the_line_after() -> None:
    (c,) = changes("f.py", "a\nb\n", "a\nnew\nb\n")
    assert (c.start, c.end, c.old, c.new) == (2, 2, ["b\n"], ["new\n", "b\n"])
    assert "start_line" not in c.comment()


def test_insertion_anchors_on_the_line_before_when_only_that_one_is_in_the_diff() -> None:
    old, new = "a\nb\nc\n", "a\nb\nnew\nc\n"
    (c,) = changes("f.py", old, new, {1: 0, 2: 0})
    assert (c.start, c.end, c.new) == (2, 2, ["b\n", "new\n"])
    (c,) = changes("f.py", old, new, {2: 0, 3: 0})
    assert (c.start, c.end) == (3, 3)
    (c,) = changes("f.py", old, new, {})  # neither: the patch in the body shows it
    assert (c.start, c.end) == (3, 3)


def test_insertion_at_the_top_anchors_on_the_first_line() -> None:
    (c,) = changes("f.py", "a\nb\n", "new\na\nb\n")
    assert (c.start, c.end, c.new) == (1, 1, ["new\n", "a\n"])


def test_insertion_at_the_end_anchors_on_the_last_line() -> None:
    (c,) = changes("f.py", "a\nb\n", "a\nb\nnew\n")
    assert (c.start, c.end, c.new) == (2, 2, ["b\n", "new\n"])


def test_deletion_suggests_nothing_in_its_place() -> None:
    (c,) = changes("f.py", "a\nb\nc\n", "a\nc\n")
    assert (c.start, c.end, c.new) == (2, 2, [])
    assert c.comment()["body"] == "```suggestion\n```"


def test_touching_changes_are_one_suggestion() -> None:
    (c,) = changes("f.py", "a\nb\nc\n", "a\nB\nnew\nc\n")
    assert (c.start, c.end, c.new) == (2, 2, ["B\n", "new\n"])


def test_insertions_on_neighbouring_lines_are_one_suggestion() -> None:
    # each insertion anchors on the line after it: "b" and "c" touch
    (c,) = changes("f.py", "a\nb\nc\nd\n", "a\nX\nb\nY\nc\nd\n")
    assert (c.start, c.end, c.new) == (2, 3, ["X\n", "b\n", "Y\n", "c\n"])


def test_separate_changes_stay_separate() -> None:
    found = changes("f.py", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n")
    assert [(c.start, c.end) for c in found] == [(1, 1), (5, 5)]


def test_no_final_newline() -> None:
    (c,) = changes("f.py", "a\nb", "a\nB")
    assert c.comment()["body"] == "```suggestion\nB\n```"


PATCH = """@@ -1,3 +1,4 @@
 a
+b
 c
-d
 e
\\ No newline at end of file
@@ -10,2 +11,3 @@ def f():
 x
+y
 z
"""


def test_commentable_lines_per_hunk() -> None:
    assert commentable_lines(PATCH) == {1: 0, 2: 0, 3: 0, 4: 0, 11: 1, 12: 1, 13: 1}


def test_removed_files_and_missing_patches() -> None:
    files = [
        {"filename": "gone.py", "status": "removed", "patch": "@@ -1 +0,0 @@\n-x\n"},
        {"filename": "big.py", "status": "modified"},
    ]
    assert pr_files(files) == {"big.py": {}}


@pytest.mark.parametrize(
    ("start", "end", "inline"),
    [(2, 3, True), (4, 11, False), (20, 20, False)],
)
def test_split_needs_one_hunk(start: int, end: int, inline: bool) -> None:
    c = Change("f.py", start, end, [], [])
    got = split([c], {"f.py": commentable_lines(PATCH)})
    assert (got[0] == [c]) is inline and (got[1] == [c]) is not inline


def test_notebooks_go_to_the_body() -> None:
    c = Change("n.ipynb", 1, 1, [], [])
    assert split([c], {"n.ipynb": {1: 0}}) == ([], [c])


def test_patch_applies_only_the_changes_given() -> None:
    old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n"
    first, second = changes("f.py", old, "A\nb\nc\nd\ne\nf\ng\nh\nI\n")
    text = patch("f.py", old, [second])
    assert "+I\n" in text and "+A" not in text and text.startswith("--- a/f.py\n+++ b/f.py\n")


def test_action_metadata() -> None:
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((Path(__file__).parents[2] / "action.yml").read_text())
    assert set(action["inputs"]) >= {"mode", "paths", "args", "changed-only", "token"}
    assert action["runs"]["using"] == "composite"
    assert any("rnnfix.ci" in step.get("run", "") for step in action["runs"]["steps"])
