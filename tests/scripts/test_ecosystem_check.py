"""The ecosystem check on a synthetic setup: a target repository as a local git
snapshot, and a fake `rnnfix` package in a second local git repository whose two
commits behave differently. No network; the real rnnfix runs once."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import ecosystem_check
import pytest

BUGGY = textwrap.dedent(
    """\
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(8, 4), torch.randn(8, 1))]
    for epoch in range(3):
        for x, y in data:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            print(model(data[0][0]).mean())
    """
)

# A stand-in for `python -m rnnfix apply`: one finding and one inserted line per
# file that calls `model.eval()`; the second version also flags `net.eval()`.
FAKE_MAIN = """\
import json, pathlib, sys
WATCH = {watch!r}
args = sys.argv[1:]
hits = []
for path in sorted(pathlib.Path(".").rglob("*.py")):
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        if any(w in line for w in WATCH):
            hits.append((path.as_posix(), n, line))
if "--check" in args:
    diags = [dict(path=p, line=n, column=1, end_line=n, end_column=1, cell=None,
                  code="RNF999", message="fake", fixable=True,
                  fix=dict(safe=True, description="insert train()")) for p, n, _ in hits]
    print(json.dumps(dict(diagnostics=diags, files=[])))
    sys.exit(1 if hits else 0)
if "--diff" in args:
    for p, n, line in hits:
        indent = line[: len(line) - len(line.lstrip())]
        print(f"--- a/{{p}}\\n+++ b/{{p}}\\n@@ -{{n}},1 +{{n}},2 @@")
        print(f" {{line}}\\n+{{indent}}model.train()")
    sys.exit(1 if hits else 0)
sys.exit(2)
"""


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, object]:
    # The target repository, laid out as the `fetch` tool does: mirrors/owner+name/repo/.git
    target = tmp_path / "mirrors" / "someone+trainer" / "repo"
    target.mkdir(parents=True)
    git("init", "-q", cwd=target)
    (target / "train.py").write_text(BUGGY)
    (target / "README.md").write_text("not copied\n")
    pinned = commit_all(target, "pinned")
    (target / "train.py").write_text("# a later commit the manifest does not pin\n")
    commit_all(target, "later")

    # A fake rnnfix, two versions.
    fake = tmp_path / "fake-rnnfix"
    (fake / "rnnfix").mkdir(parents=True)
    git("init", "-q", cwd=fake)
    (fake / "rnnfix" / "__init__.py").write_text("")
    (fake / "rnnfix" / "__main__.py").write_text(FAKE_MAIN.format(watch=["model.eval()"]))
    v1 = commit_all(fake, "v1")
    (fake / "rnnfix" / "__main__.py").write_text(
        FAKE_MAIN.format(watch=["model.eval()", "optimizer.step()"])
    )
    v2 = commit_all(fake, "v2")

    manifest = tmp_path / "eco.toml"
    manifest.write_text(
        f'[[repo]]\nname = "trainer"\ngithub = "someone/trainer"\ncommit = "{pinned}"\n'
        f'kind = "test"\n\n'
        f'[[repo]]\nname = "gone"\ngithub = "someone/gone"\ncommit = "{pinned}"\n'
    )
    return {"tmp": tmp_path, "manifest": manifest, "fake": fake, "v1": v1, "v2": v2}


def base_args(s: dict[str, object]) -> list[str]:
    tmp = s["tmp"]
    assert isinstance(tmp, Path)
    return [
        "--manifest",
        str(s["manifest"]),
        "--mirrors",
        str(tmp / "mirrors"),
        "--cache",
        str(tmp / "cache"),
        "--rnnfix-repo",
        str(s["fake"]),
    ]


def test_differences_between_two_refs_are_printed_by_repository(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = setup["tmp"]
    assert isinstance(tmp, Path)
    code = ecosystem_check.main(
        [
            *base_args(setup),
            "--base",
            str(setup["v1"]),
            "--head",
            str(setup["v2"]),
            "--repo",
            "trainer",
            "--settings",
            "default,strict",
            "--save",
            str(tmp / "saved"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "== trainer  someone/trainer@" in out
    # Only the new finding and the new edit, under each setting; the common ones are not shown.
    assert out.count("+ finding  train.py:11:1 RNF999 fake [safe fix: insert train()]") == 2
    assert out.count("+ edit     train.py:12") == 2
    assert "train.py:12:1" not in out  # model.eval(): found by both versions
    assert "trainer                      4 differences" in out
    # The pinned commit was extracted, not the later one; only files rnnfix reads.
    extracted = next(p for p in (tmp / "cache").glob("trainer-*") if p.is_dir())
    assert (extracted / "train.py").read_text() == BUGGY
    assert not (extracted / "README.md").exists()
    saved = (tmp / "saved" / "strict" / "trainer.head.diff").read_text()
    assert saved.count("+    model.train()") == 1 and "+        model.train()" in saved


def test_same_version_twice_shows_no_difference(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = str(setup["v1"])
    args = [*base_args(setup), "--base", v1, "--head", v1, "--repo", "trainer"]
    assert ecosystem_check.main([*args, "--settings", "default"]) == 0
    assert "trainer                      0 differences" in capsys.readouterr().out


def test_missing_snapshot_is_reported_not_fatal(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = str(setup["v1"])
    code = ecosystem_check.main(
        [*base_args(setup), "--base", v1, "--head", v1, "--settings", "default"]
    )
    out = capsys.readouterr().out
    assert code == 2
    assert "gone" in out and "SKIPPED (no snapshot of someone/gone" in out


def test_installed_rnnfix_without_base_lists_everything(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*base_args(setup), "--repo", "trainer", "--settings", "default"]
    assert ecosystem_check.main(args) == 1
    out = capsys.readouterr().out
    assert "finding  train.py:" in out and "RNF001" in out
    assert "edit     train.py:" in out and "model.train()" in out


def test_diff_blocks_are_keyed_by_original_line() -> None:
    diff = (
        "--- a/x.py\n+++ b/x.py\n@@ -3,4 +3,5 @@\n a\n b\n+c\n d\n-e\n+f\n"
        "--- a/y.py\n+++ b/y.py\n@@ -1,1 +1,2 @@\n+import torch\n z\n"
        # a removed line that reads like a header, and an insertion with no context
        "--- a/z.py\n+++ b/z.py\n@@ -1,2 +1,1 @@\n--- x\n keep\n@@ -7,0 +7,1 @@\n+new\n"
    )
    assert ecosystem_check.diff_blocks(diff) == [
        "x.py:5\n+c",
        "x.py:6\n-e\n+f",
        "y.py:1\n+import torch",
        "z.py:1\n--- x",
        "z.py:8\n+new",
    ]


def test_manifest_in_the_repository_is_valid() -> None:
    repos = ecosystem_check.load_manifest(ecosystem_check.DEFAULT_MANIFEST)
    assert len(repos) >= 20
    for repo in repos:
        assert len(repo.commit) == 40 and repo.github.count("/") == 1 and repo.kind


def test_a_saved_baseline_can_stand_in_for_the_base(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp = setup["tmp"]
    assert isinstance(tmp, Path)
    common = [*base_args(setup), "--repo", "trainer", "--settings", "default"]
    saved = str(tmp / "saved")
    assert ecosystem_check.main([*common, "--head", str(setup["v1"]), "--save", saved]) == 1
    capsys.readouterr()
    assert ecosystem_check.main([*common, "--head", str(setup["v2"]), "--against", saved]) == 1
    out = capsys.readouterr().out
    assert "+ finding  train.py:11:1 RNF999" in out
    assert "trainer                      2 differences" in out
