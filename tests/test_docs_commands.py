"""The README's test command is the one CI runs (``.ci/run``)."""

from __future__ import annotations

import re
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _pytest_commands(text: str) -> set[str]:
    return {m.group(0).strip() for m in re.finditer(r"python -m pytest[^\n&|;#]*", text)}


def test_readme_and_ci_run_the_same_tests() -> None:
    readme = _pytest_commands((_ROOT / "README.md").read_text(encoding="utf-8"))
    ci = _pytest_commands((_ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert len(ci) == 1
    assert ci == readme


# Install lines and pins in what a user copies (issue 38, item 5): they must
# work from this repository as it is. No release exists until its version tag
# does: until then no line may install from PyPI nor pin a version.
_COPIED = ["README.md", "CONTRIBUTING.md", "action.yml", "templates/*", "docs/*.md"]
_FROM_PYPI = re.compile(r"pip install [\"']?rnnfix(?:\[[\w,]+\])?[\"']?(?!\s*@)")
_PINNED = re.compile(r"(?:rnnfix/rnnfix@|rnnfix/rnnfix/|rev:\s*)(v?\d+\.\d+[\w.]*)")


def _copied_texts() -> dict[str, str]:
    files = sorted({p for pattern in _COPIED for p in _ROOT.glob(pattern) if p.is_file()})
    return {str(p.relative_to(_ROOT)): p.read_text(encoding="utf-8") for p in files}


def _tags() -> set[str]:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(_ROOT), "tag", "--list"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return set(out.split())


def test_install_lines_and_pins_name_only_releases_that_exist() -> None:
    from rnnfix._version import __version__

    tags = _tags()
    released = f"v{__version__}" in tags or __version__ in tags
    for name, text in _copied_texts().items():
        if not released:
            assert not _FROM_PYPI.findall(text), f"{name}: installs from PyPI before a release"
        for pin in _PINNED.findall(text):
            assert pin in tags, f"{name}: pins {pin}, which is no tag of this repository"


def test_the_install_lines_extras_exist() -> None:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    extras = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    readme = (_ROOT / "README.md").read_text(encoding="utf-8")
    used = set(re.findall(r"pip install -e '\.\[(\w+)\]'", readme))
    assert used >= {"dev", "verify", "lsp"} and used <= set(extras)


def test_the_pre_commit_snippet_names_the_hooks_there_are() -> None:
    hooks = (_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    ids = set(re.findall(r"^- id: ([\w-]+)", hooks, re.M))
    readme = (_ROOT / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("# .pre-commit-config.yaml", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"- id: ([\w-]+)", snippet)) | set(
        re.findall(r"or ([\w-]+) to", snippet)
    )
    assert named and named <= ids
