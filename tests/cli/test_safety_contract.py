"""DESIGN.md §4, one test per promise."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from tests.cli.conftest import BUGGY, CLEAN, FIXED


def test_clean_file_is_byte_identical_and_mtime_untouched(run, tree: Path) -> None:
    clean = tree / "clean.py"
    os.utime(clean, (1_000_000, 1_000_000))
    before = clean.read_bytes()
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert clean.read_bytes() == before
    assert clean.stat().st_mtime == 1_000_000
    assert (tree / "buggy.py").read_text() == FIXED


def test_second_run_changes_nothing(run, tree: Path) -> None:
    run(str(tree))
    snapshot = {p: p.read_bytes() for p in tree.iterdir()}
    result = run("--check", str(tree))
    assert result.exit_code == 0, result.output
    assert {p: p.read_bytes() for p in tree.iterdir()} == snapshot


@pytest.mark.parametrize(
    ("name", "transform"),
    [
        ("crlf", lambda s: s.replace("\n", "\r\n").encode()),
        (
            "tabs",
            lambda s: ("if True:\n" + "".join("\t" + line for line in s.splitlines(True))).encode(),
        ),
        ("bom", lambda s: codecs.BOM_UTF8 + s.encode()),
        ("cookie", lambda s: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + s).encode("latin-1")),
        ("quotes", lambda s: (s + 'name = \'single\'  # c\n\n\n\nother = """triple"""\n').encode()),
    ],
)
def test_formatting_survives(run, tmp_path: Path, name: str, transform) -> None:
    f = tmp_path / f"{name}.py"
    f.write_bytes(transform(BUGGY))
    result = run(str(f))
    assert result.exit_code == 0, result.output
    assert f.read_bytes() == transform(FIXED)


def test_syntax_error_reported_untouched_and_run_goes_on(run, tree: Path) -> None:
    bad = tree / "bad.py"
    bad.write_text("def f(:\n    m.module.eval()\n")  # RNF002's text: parsed (``filegate``)
    result = run(str(tree))
    assert result.exit_code == 2
    assert f"{bad}:1:7: cannot parse:" in result.output
    assert bad.read_text() == "def f(:\n    m.module.eval()\n"
    assert (tree / "buggy.py").read_text() == FIXED


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"x = '\xff\xfe'\n", "cannot decode as utf-8"),
        (b"\x00\x01binary\x00", "binary file"),
    ],
)
def test_undecodable_and_binary_reported(run, tree: Path, content: bytes, reason: str) -> None:
    bad = tree / "bad.py"
    bad.write_bytes(content)
    result = run(str(tree))
    assert result.exit_code == 2
    assert f"{bad}: {reason}" in result.output
    assert bad.read_bytes() == content
    assert (tree / "buggy.py").read_text() == FIXED


def test_unknown_codec_cookie_read_as_utf8_with_a_warning(run, tree: Path) -> None:
    # `# -*- coding: future_fstrings -*-` (a Python 2 back-port of f-strings)
    # names a codec only its package registers: the file is UTF-8 text, fixed
    # like any other, its cookie and its non-ASCII bytes kept.
    f = tree / "buggy.py"
    head = "# -*- coding: future_fstrings -*-\n# caf\u00e9\n"
    f.write_bytes((head + BUGGY).encode("utf-8"))
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert f"{f}: coding cookie names an unknown codec (future_fstrings): read as utf-8" in (
        result.output
    )
    assert f.read_bytes() == (head + FIXED).encode("utf-8")


def test_unknown_codec_cookie_with_non_utf8_bytes_still_fails(run, tree: Path) -> None:
    bad = tree / "bad.py"
    content = b"# -*- coding: future_fstrings -*-\nx = '\xff'\n"
    bad.write_bytes(content)
    result = run(str(tree))
    assert result.exit_code == 2
    assert f"{bad}: cannot decode as utf-8" in result.output
    assert bad.read_bytes() == content


def test_unreadable_file_reported(run, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root reads everything, so make the read itself fail.
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "buggy.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = run(str(tree))
    assert result.exit_code == 2
    assert f"{tree / 'buggy.py'}: cannot read: Permission denied" in result.output


def test_read_only_file_is_not_written(run, tree: Path) -> None:
    buggy = tree / "buggy.py"
    buggy.chmod(0o444)
    result = run(str(tree))
    assert result.exit_code == 2
    assert f"{buggy}: cannot write: file is read-only" in result.output
    assert buggy.read_text() == BUGGY


def test_write_is_atomic_and_keeps_mode(run, tree: Path) -> None:
    buggy = tree / "buggy.py"
    buggy.chmod(0o750)
    result = run(str(buggy))
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(buggy.stat().st_mode) == 0o750
    assert sorted(p.name for p in tree.iterdir()) == ["buggy.py", "clean.py"]  # no temp left


def test_interrupted_write_leaves_old_file(
    run, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    result = run(str(tree))
    assert result.exit_code == 2
    assert (tree / "buggy.py").read_text() == BUGGY
    assert sorted(p.name for p in tree.iterdir()) == ["buggy.py", "clean.py"]


def test_symlink_named_explicitly_is_refused(run, tree: Path) -> None:
    link = tree / "link.py"
    link.symlink_to(tree / "buggy.py")
    result = run(str(link))
    assert result.exit_code == 2
    assert f"{link}: is a symbolic link" in result.output
    assert link.is_symlink() and (tree / "buggy.py").read_text() == BUGGY


def test_symlinks_are_not_followed_in_folders(run, tree: Path, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "victim.py"
    outside.write_text(BUGGY)
    (tree / "victim.py").symlink_to(outside)
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert outside.read_text() == BUGGY


def test_huge_file_refused(run, tree: Path) -> None:
    (tree / "pyproject.toml").write_text("[tool.rnnfix]\nmax-file-size = 10\n")
    result = run(str(tree / "buggy.py"))
    assert result.exit_code == 2
    assert "file too large" in result.output
    assert (tree / "buggy.py").read_text() == BUGGY


def test_fix_that_breaks_parse_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rnnfix.source.rewrite
    from rnnfix.run.engine import fix_source

    real = rnnfix.source.rewrite.apply_edits
    monkeypatch.setattr(
        rnnfix.source.rewrite, "apply_edits", lambda s, e, *a, **k: real(s, e, *a, **k) + "\n(((\n"
    )
    result = fix_source(BUGGY)
    assert result.fixed == BUGGY
    assert result.dropped and "SyntaxError" in result.dropped[0].reason
    assert result.findings  # still reported


def test_clean_text_constant() -> None:
    assert "module" not in CLEAN


@pytest.mark.parametrize(
    "content",
    [
        BUGGY.replace("\n", "\r").encode(),  # CR-only newlines (classic Mac)
        BUGGY.replace("model = ", "\x0cmodel = ").encode(),  # a form feed
    ],
    ids=["cr-only", "form-feed"],
)
def test_file_libcst_cannot_round_trip_is_reported_not_rewritten(
    run, tmp_path: Path, content: bytes
) -> None:
    f = tmp_path / "odd.py"
    f.write_bytes(content)
    result = run(str(f))
    assert result.exit_code == 1, result.output  # the finding stays, without its fix
    assert "fix not applied" in result.output
    assert "byte for byte" in result.output
    assert f.read_bytes() == content
