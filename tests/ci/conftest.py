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


@dataclass
class FakeGitHub:
    url: str = ""
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    # (method, path regex) -> reply; the first match wins, else a default
    routes: list[tuple[str, str, Reply]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, method: str, path: str, body: Any) -> Reply:
        self.requests.append((method, path, body))
        route = path.split("?")[0]
        for m, pattern, answer in self.routes:
            if m == method and re.fullmatch(pattern, route):
                return answer
        if method == "GET" and route.endswith("/files"):
            return 200, self.files, {}
        if method == "GET" and re.search(r"/pulls/\d+/comments$", route):
            return 200, self.review_comments, {}
        if method == "GET" and route.endswith("/reviews"):
            return 200, self.reviews, {}
        return 200, {"id": 99}, {}

    def sent(self, method: str, suffix: str = "") -> list[Any]:
        return [b for m, p, b in self.requests if m == method and p.split("?")[0].endswith(suffix)]


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
            data = json.dumps(body).encode()
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
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_API_URL": api.url,
            "GITHUB_TOKEN": "t0ken",
            **extra,
        }

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
    remote, repo = tmp_path / "remote.git", tmp_path / "repo"
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
