"""The corpus check's bookkeeping: the labelled corpus in the repository is
well-formed, and an rnnfix run is sorted into the right outcome per case."""

from __future__ import annotations

import json
import textwrap

import corpus_check
import ecosystem_check
from _rnnfix_run import Proc

SOURCE = textwrap.dedent(
    """\
    import torch


    class Runner:
        def train(self, model, data, opt):
            for x in data:
                loss = model(x).sum()
                loss.backward()
                opt.step()
                model.eval()

        def test(self, model, data):
            return [model(x) for x in data]
    """
)


def case(label: str, function: str = "Runner.train", line: int = 5) -> corpus_check.Case:
    return corpus_check.Case(
        repo="r",
        commit="0" * 40,
        path="pkg/run.py",
        function=function,
        line=line,
        label=label,
        klass="base",
        rule="RNF001" if label == "bug" else "none",
        reason="test",
    )


def check_json(*lines: int, path: str = "pkg/run.py") -> Proc:
    diags = [{"path": path, "line": n, "column": 1, "code": "RNF001"} for n in lines]
    return Proc(1 if lines else 0, json.dumps({"diagnostics": diags, "files": []}), "")


def diff_at(line: int, added: str, path: str = "pkg/run.py") -> Proc:
    """A diff inserting `added` before `line` (a unified diff numbers it after line - 1)."""
    hunk = f"@@ -{line - 1},0 +{line},1 @@"
    return Proc(1, f"--- a/{path}\n+++ b/{path}\n{hunk}\n+{added}\n", "")


NO_DIFF = Proc(0, "", "")


def test_the_corpus_in_the_repository_is_well_formed() -> None:
    repos = {
        r.name: r
        for m in (ecosystem_check.DEFAULT_MANIFEST, corpus_check.CORPUS_MANIFEST)
        for r in ecosystem_check.load_manifest(m)
    }
    dev_file, held_file = corpus_check.DEFAULT_CORPUS
    dev = corpus_check.load_corpus(dev_file, repos)
    held = corpus_check.load_corpus(held_file, repos)
    cases = dev + held
    bugs = [c for c in cases if c.label == "bug"]
    assert len(cases) >= 250 and len(bugs) >= 100
    assert len({c.repo for c in cases}) >= 120
    assert len({c.ident for c in cases}) == len(cases)  # no case labelled twice
    assert all(c.rule != "none" for c in bugs)
    assert all(c.rule == "none" for c in cases if c.label == "correct")
    # Split by repository: each part in its own file, no repository in both,
    # and the held-back part about a third of the whole.
    assert {c.part for c in dev} == {"dev"} and {c.part for c in held} == {"held"}
    assert not {c.repo for c in dev} & {c.repo for c in held}
    assert 0.25 <= len(held) / len(cases) <= 0.75


def test_an_edit_inside_the_function_fixes_a_bug() -> None:
    out = corpus_check.judge(
        case("bug"), "default", SOURCE, diff_at(6, "        model.train()"), check_json(7)
    )
    assert (out.verdict, out.codes) == ("fixed", ["RNF001"])


def test_an_insertion_after_the_last_line_counts_only_when_indented_into_the_body() -> None:
    # line 11 is the blank line after Runner.train (lines 5-10)
    inside = corpus_check.judge(
        case("bug"), "default", SOURCE, diff_at(11, "            model.train()"), NO_DIFF
    )
    outside = corpus_check.judge(
        case("bug"), "default", SOURCE, diff_at(11, "    @torch.no_grad()"), NO_DIFF
    )
    assert inside.verdict == "fixed"
    assert outside.verdict == "missed"


def test_a_finding_without_an_edit_is_reported_only() -> None:
    out = corpus_check.judge(case("bug"), "default", SOURCE, NO_DIFF, check_json(8))
    assert out.verdict == "reported"


def test_edits_and_findings_elsewhere_do_not_count() -> None:
    elsewhere = diff_at(13, "        model.eval()")  # in Runner.test
    other_file = diff_at(6, "        model.train()", path="pkg/other.py")
    for diff in (elsewhere, other_file):
        out = corpus_check.judge(case("bug"), "default", SOURCE, diff, check_json(13))
        assert out.verdict == "missed"


def test_an_edit_in_correct_code_is_a_wrong_edit() -> None:
    edited = corpus_check.judge(
        case("correct", "Runner.test", 12),
        "strict",
        SOURCE,
        diff_at(13, "        model.eval()"),
        check_json(13),
    )
    alone = corpus_check.judge(
        case("correct", "Runner.test", 12), "strict", SOURCE, NO_DIFF, check_json(13)
    )
    assert edited.verdict == "edited"
    assert (alone.verdict, alone.codes) == ("left-alone", ["RNF001"])


def test_a_crash_is_an_error_not_a_miss() -> None:
    crashed = Proc(1, "", "Traceback (most recent call last):\n  boom\nValueError: x\n")
    out = corpus_check.judge(case("bug"), "default", SOURCE, crashed, check_json())
    assert out.verdict == "error" and "ValueError" in out.error


def test_totals_give_recall_and_precision_of_edits() -> None:
    outs = [
        corpus_check.Outcome(case("bug"), "default", "fixed"),
        corpus_check.Outcome(case("bug"), "default", "missed"),
        corpus_check.Outcome(case("correct"), "default", "edited"),
        corpus_check.Outcome(case("correct"), "default", "left-alone"),
    ]
    line = corpus_check.totals(outs)
    assert "recall 50%" in line and "precision of edits 50%" in line
