"""Issue 26.6: the GitLab template and its merge-request note, against a
stand-in of GitLab's notes API (every request logged)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rnnfix.ci.gitlab import MARKER, _per_file
from rnnfix.ci.gitlab import main as note_main
from tests.ci.conftest import CLEAN, ONE_LINE, Clock, PullRequest, git, make_pr

ROOT = Path(__file__).parents[2]
TOKEN = "glpat-s3cret"
MAX_NOTE = 1_000_000


@dataclass
class FakeGitLab:
    url: str = ""
    notes: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, Any, dict[str, str]]] = field(default_factory=list)
    next_id: int = 500

    def reply(self, method: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        self.requests.append((method, path, body, headers))
        if headers.get("job-token"):
            return 403, {"message": "403 Forbidden"}  # a job token cannot write notes
        if headers.get("private-token") != TOKEN:
            return 401, {"message": "401 Unauthorized"}
        route = path.split("?")[0]
        if not re.fullmatch(r"/api/v4/projects/42/merge_requests/3/notes(/\d+)?", route):
            return 404, {"message": "404 Not found"}
        if method == "GET":
            return 200, self.notes
        if len(str((body or {}).get("body", ""))) > MAX_NOTE:
            return 400, {"message": "Note is too long (maximum is 1000000 characters)"}
        if method == "POST":
            self.next_id += 1
            self.notes.append({"id": self.next_id, "body": body["body"]})
            return 201, self.notes[-1]
        if method == "PUT":
            note_id = int(route.rsplit("/", 1)[1])
            (note,) = [n for n in self.notes if n["id"] == note_id]
            note["body"] = body["body"]
            return 200, note
        return 405, {"message": "405 Method Not Allowed"}

    def writes(self) -> list[str]:
        return [f"{m} {p.split('?')[0]}" for m, p, _, _ in self.requests if m != "GET"]


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    fake = FakeGitLab()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, body = fake.reply(
                self.command, self.path, json.loads(raw) if raw else None, headers
            )
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield fake
    server.shutdown()
    server.server_close()


def env_for(pr: PullRequest, gitlab: FakeGitLab, **extra: str) -> dict[str, str]:
    return {
        "CI_API_V4_URL": f"{gitlab.url}/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "3",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": pr.base,
        "CI_COMMIT_SHA": pr.head,
        "CI_PROJECT_DIR": str(pr.repo),
        "RNNFIX_GITLAB_TOKEN": TOKEN,
        "RNNFIX_ARGS": "--no-cache",
        **extra,
    }


def run_note(env: dict[str, str]) -> int:
    from rnnfix.ci.api import Pace

    clock = Clock()
    return note_main(env, Pace(sleep=clock.sleep, monotonic=clock.now, wall=clock.now))


def test_note_with_the_patch_then_updated_in_place(tmp_path: Path, gitlab: FakeGitLab) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"wrap.py": ONE_LINE})
    assert run_note(env_for(pr, gitlab)) == 0
    assert gitlab.writes() == ["POST /api/v4/projects/42/merge_requests/3/notes"]
    (note,) = gitlab.notes
    assert MARKER in note["body"] and "```diff\n" in note["body"]
    assert "-model.module.train()\n+model.train()\n" in note["body"]
    assert "old.py" not in note["body"]  # only what the merge request changed
    assert all(h.get("private-token") == TOKEN for *_, h in gitlab.requests)
    assert git(pr.repo, "status", "--porcelain") == ""  # --diff: nothing written
    # the same commit again: nothing to write
    gitlab.requests.clear()
    assert run_note(env_for(pr, gitlab)) == 0
    assert gitlab.writes() == []
    # fixed by a new push: the same note says so
    (pr.repo / "wrap.py").write_text(ONE_LINE.replace(".module", ""))
    git(pr.repo, "commit", "-q", "-am", "fixed")
    assert run_note(env_for(pr, gitlab, CI_COMMIT_SHA="c0ffee" * 4)) == 0
    assert gitlab.writes() == [f"PUT /api/v4/projects/42/merge_requests/3/notes/{note['id']}"]
    assert gitlab.notes[0]["body"].startswith("rnnfix: nothing left to fix as of c0ffeec0ffee")


def test_nothing_to_fix_posts_nothing(tmp_path: Path, gitlab: FakeGitLab) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"ok.py": CLEAN})
    assert run_note(env_for(pr, gitlab)) == 0
    assert gitlab.writes() == []


def test_without_a_project_token_it_says_why(
    tmp_path: Path, gitlab: FakeGitLab, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    env = env_for(pr, gitlab, CI_JOB_TOKEN="job-token")
    del env["RNNFIX_GITLAB_TOKEN"]
    assert run_note(env) == 1
    err = capfd.readouterr().err
    assert "job token cannot write merge-request notes" in err and gitlab.requests == []


def test_a_bad_token_is_one_line(
    tmp_path: Path, gitlab: FakeGitLab, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert run_note(env_for(pr, gitlab, RNNFIX_GITLAB_TOKEN="wrong")) == 1
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("rnnfix:")]
    assert "GitLab API: GET /projects/42/merge_requests/3/notes" in line and "401" in line
    assert "Traceback" not in err and "wrong" not in err


def test_not_a_merge_request_pipeline(tmp_path: Path, gitlab: FakeGitLab) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    env = env_for(pr, gitlab)
    del env["CI_MERGE_REQUEST_IID"]
    assert run_note(env) == 0 and gitlab.requests == []


def test_per_file_split_counts_hunk_lines() -> None:
    one = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n z\n"
    two = "--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n"
    assert _per_file(one + two) == [one, two]


def test_template() -> None:
    yaml = pytest.importorskip("yaml")
    template = yaml.safe_load((ROOT / "templates" / "rnnfix.gitlab-ci.yml").read_text())
    check, note = template["rnnfix"], template["rnnfix-note"]
    assert "--output-format gitlab" in check["script"][0]
    assert check["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    assert "python -P -m rnnfix.ci.gitlab" in note["script"][0]
    assert '$RNNFIX_MR_NOTE == "true"' in note["rules"][0]["if"]
    assert template[".rnnfix-base"]["variables"]["PYTHONSAFEPATH"] == "1"
