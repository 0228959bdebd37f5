"""A git repository holding a pull request, its event file, and a local HTTP
server standing in for the GitHub REST API that records every request."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parents[2] / "fixtures"
# RNF002, one line: model.module.train() -> model.train()
ONE_LINE = (
    "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"
)
CLEAN = "import torch\n\nx = torch.zeros(3)\n"

Reply = tuple[int, Any, dict[str, str]]

# GitHub's documented limits the stand-in enforces
MAX_BODY = 65_536  # characters of a review's or a comment's body
WRITES_PER_MINUTE = 80  # content-generating requests (secondary rate limit)
WRITES_PER_HOUR = 500
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)
READ_ONLY = "Resource not accessible by integration"


@dataclass
class Clock:
    """Fake time for the bot's pacing and the stand-in's rate windows:
    ``sleep`` moves it on at once."""

    t: float = 1_700_000_000.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += max(0.0, seconds)


@dataclass
class FakeGitHub:
    """A stand-in for GitHub's REST API with state (reviews, comments) and
    GitHub's documented limits: bodies over 65,536 characters and comments
    outside the diff are 422, more than ``max_review_comments`` comments in
    one review are 422, writes over 80 a minute or 500 an hour get a
    secondary rate limit (403 + Retry-After), a read-only (fork) token gets
    403 on every write. Every request is logged."""

    url: str = ""
    clock: Clock = field(default_factory=Clock)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    # (method, path regex) -> reply; the first match wins, before the state
    routes: list[tuple[str, str, Reply]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    read_only: bool = False
    max_review_comments: int = 50
    enforce_diff: bool = True
    fail_after_writes: int | None = None  # then every write answers 502 (a crash midway)
    # answers for the next requests matching (method, path regex), each used once
    inject: list[tuple[str, str, Reply]] = field(default_factory=list)
    writes_per_minute: int = WRITES_PER_MINUTE
    writes_per_hour: int = WRITES_PER_HOUR
    writes: list[float] = field(default_factory=list)  # times of accepted writes
    next_id: int = 1000
    write_interval: float = 1.0

    def pace(self, **overrides: Any) -> Any:
        from rnnfix.ci.api import Pace

        return Pace(
            sleep=self.clock.sleep,
            monotonic=self.clock.now,
            wall=self.clock.now,
            write_interval=overrides.get("write_interval", self.write_interval),
        )

    def run(self, env: dict[str, str], **pace: Any) -> int:
        from rnnfix.ci.bot import main

        return main(env, pace=self.pace(**pace))

    def reply(self, method: str, path: str, body: Any) -> Reply:
        answer = self._reply(method, path, body)
        self.requests.append((method, path, body))
        self.statuses.append(answer[0])
        return answer

    def _reply(self, method: str, path: str, body: Any) -> Reply:
        route, _, query = path.partition("?")
        for i, (m, pattern, answer) in enumerate(self.inject):
            if m == method and re.fullmatch(pattern, route):
                del self.inject[i]
                return answer
        for m, pattern, answer in self.routes:
            if m == method and re.fullmatch(pattern, route):
                return answer
        if method == "GET":
            return self._get(route, query)
        if self.read_only:
            return 403, {"message": READ_ONLY}, {}
        now = self.clock.now()
        minute = [t for t in self.writes if t > now - 60]
        hour = [t for t in self.writes if t > now - 3600]
        if len(minute) >= self.writes_per_minute or len(hour) >= self.writes_per_hour:
            return 403, {"message": SECONDARY}, {"Retry-After": "60"}
        if self.fail_after_writes is not None and len(self.writes) >= self.fail_after_writes:
            return 502, {"message": "Server Error"}, {}
        answer = self._write(method, route, body)
        if answer[0] < 300:
            self.writes.append(now)
        return answer

    def _get(self, route: str, query: str) -> Reply:
        if route.endswith("/files"):
            items = self.files
        elif re.search(r"/pulls/\d+/comments$", route):
            items = self.review_comments
        elif route.endswith("/reviews"):
            items = self.reviews
        else:
            return 404, {"message": "Not Found"}, {}
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        per_page, page = int(params.get("per_page", 30)), int(params.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            headers["Link"] = f'<{self.url}{route}?per_page={per_page}&page={page + 1}>; rel="next"'
        return 200, chunk, headers

    def _invalid(self, message: str) -> Reply:
        return 422, {"message": "Validation Failed", "errors": [message]}, {}

    def _check_comment(self, c: dict[str, Any]) -> str | None:
        if len(c.get("body") or "") > MAX_BODY:
            return "body is too long (maximum is 65536 characters)"
        if not self.enforce_diff:
            return None
        lines = commentable(self.files).get(c["path"], {})
        hunks = {lines.get(n) for n in range(c.get("start_line") or c["line"], c["line"] + 1)}
        if None in hunks or len(hunks) != 1:
            return "pull_request_review_thread.line must be part of the diff"
        return None

    def _write(self, method: str, route: str, body: Any) -> Reply:
        if len(str((body or {}).get("body") or "")) > MAX_BODY:
            return self._invalid("body is too long (maximum is 65536 characters)")
        if method == "POST" and re.search(r"/pulls/\d+/reviews$", route):
            comments = body.get("comments") or []
            if len(comments) > self.max_review_comments:
                return self._invalid("too many comments in one review")
            for c in comments:
                problem = self._check_comment(c)
                if problem:
                    return self._invalid(problem)
            rid = self._id()
            self.reviews.append({"id": rid, "body": body["body"], "state": "COMMENTED"})
            for c in comments:
                self.review_comments.append(
                    {
                        **c,
                        "id": self._id(),
                        "pull_request_review_id": rid,
                        "start_line": c.get("start_line"),
                        "commit_id": body["commit_id"],
                    }
                )
            return 200, {"id": rid}, {}
        if method == "POST" and re.search(r"/pulls/\d+/comments$", route):
            problem = self._check_comment(body)
            if problem:
                return self._invalid(problem)
            self.review_comments.append({**body, "id": self._id()})
            return 201, {"id": self.next_id}, {}
        match = re.search(r"/pulls/comments/(\d+)$", route)
        if match:
            found = [c for c in self.review_comments if c["id"] == int(match.group(1))]
            if not found:
                return 404, {"message": "Not Found"}, {}
            if method == "DELETE":
                self.review_comments.remove(found[0])
                return 204, None, {}
            if method == "PATCH":
                found[0]["body"] = body["body"]
                return 200, found[0], {}
        match = re.search(r"/pulls/\d+/reviews/(\d+)$", route)
        if match and method == "PUT":
            found = [r for r in self.reviews if r["id"] == int(match.group(1))]
            if not found:
                return 404, {"message": "Not Found"}, {}
            found[0]["body"] = body["body"]
            return 200, found[0], {}
        return 404, {"message": "Not Found"}, {}

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def sent(self, method: str, suffix: str = "") -> list[Any]:
        return [b for m, p, b in self.requests if m == method and p.split("?")[0].endswith(suffix)]

    def ours(self) -> list[dict[str, Any]]:
        """The bot's comments now on the pull request."""
        return [c for c in self.review_comments if "rnnfix-suggestion" in str(c.get("body"))]


def commentable(files: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    from rnnfix.ci.prdiff import pr_files

    return pr_files(files)


@pytest.fixture
def api() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, body, headers = fake.reply(
                self.command, self.path, json.loads(raw) if raw else None
            )
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


@dataclass
class PullRequest:
    repo: Path
    remote: Path
    base: str
    head: str
    event_path: Path

    def env(self, api: FakeGitHub, mode: str, **extra: str) -> dict[str, str]:
        return {
            "RNNFIX_MODE": mode,
            "RNNFIX_ARGS": "--no-cache",
            "GITHUB_EVENT_PATH": str(self.event_path),
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_API_URL": api.url,
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_TOKEN": "t0ken",
            **extra,
        }

    @property
    def server_url(self) -> str:
        return "file://" + str(self.remote.parents[1])

    @property
    def summary(self) -> Path:
        return self.repo.parent / "summary.md"

    def patches(self) -> list[dict[str, Any]]:
        """What ``GET /pulls/{n}/files`` answers: each file's hunks."""
        out = []
        for name in git(self.repo, "diff", "--name-only", self.base, self.head).split():
            diff = git(self.repo, "diff", self.base, self.head, "--", name)
            out.append({"filename": name, "status": "modified", "patch": diff[diff.index("@@") :]})
        return out


def make_pr(tmp_path: Path, base_files: dict[str, str], pr_files: dict[str, str]) -> PullRequest:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    # the "server": GITHUB_SERVER_URL/o/r.git is where mode commit pushes
    remote, repo = tmp_path / "srv" / "o" / "r.git", tmp_path / "repo"
    remote.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    git(repo, "remote", "add", "origin", str(remote))
    for name, text in base_files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "feature")
    for name, text in pr_files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pr")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "push", "-q", "origin", "main", "feature")
    git(repo, "checkout", "-q", head)  # actions/checkout of the head sha: detached
    event = {
        "pull_request": {
            "number": 7,
            "head": {"sha": head, "ref": "feature", "repo": {"full_name": "o/r"}},
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "o/r"}},
        }
    }
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    return PullRequest(repo, remote, base, head, event_path)


def set_fork(pr: PullRequest) -> None:
    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["head"]["repo"] = {"full_name": "someone/r"}
    pr.event_path.write_text(json.dumps(event))


# GitHub's documented limits on annotations from workflow commands (actions/
# toolkit, docs/problem-matchers.md): 10 of each level per step, 50 per job
ANNOTATIONS_PER_LEVEL = 10
ANNOTATIONS_PER_JOB = 50
MAX_SUMMARY_BYTES = 1_024 * 1_024  # $GITHUB_STEP_SUMMARY of one step


def annotations_shown(log: str) -> list[str]:
    """The workflow-command annotations of one step's log that GitHub
    turns into annotations: the first 10 of each level, the rest dropped
    without a word."""
    seen: dict[str, int] = {}
    shown = []
    for line in log.splitlines():
        match = re.match(r"::(error|warning|notice)[ :]", line)
        if not match:
            continue
        seen[match.group(1)] = seen.get(match.group(1), 0) + 1
        if seen[match.group(1)] <= ANNOTATIONS_PER_LEVEL and len(shown) < ANNOTATIONS_PER_JOB:
            shown.append(line)
    return shown


def step_summary(pr: PullRequest) -> str:
    """The job summary as GitHub takes it: over 1 MiB, the step's summary
    upload fails."""
    data = pr.summary.read_bytes()
    assert len(data) <= MAX_SUMMARY_BYTES, f"job summary of {len(data)} bytes"
    return data.decode("utf-8")


def add_fork(pr: PullRequest, maintainer_can_modify: bool = True) -> Path:
    """The pull request's head in a fork, ``someone/r`` on the same server,
    as ``pull_request_target`` sees it; the fork's bare repository."""
    fork = pr.remote.parents[1] / "someone" / "r.git"
    fork.parent.mkdir(parents=True, exist_ok=True)
    git(pr.repo, "init", "-q", "--bare", str(fork))
    git(pr.repo, "push", "-q", str(fork), f"{pr.head}:refs/heads/feature")
    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["head"]["repo"] = {
        "full_name": "someone/r",
        "clone_url": f"{pr.server_url}/someone/r.git",
    }
    event["pull_request"]["maintainer_can_modify"] = maintainer_can_modify
    pr.event_path.write_text(json.dumps(event))
    return fork
