"""A small GitHub REST client on ``urllib``: JSON in and out, pagination, and
every failure as an ``ApiError`` whose message is one line a person can act on."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

_HINTS = {
    401: "the token is missing, expired or invalid",
    403: "the token lacks a permission (the workflow needs `pull-requests: write`, "
    "and `contents: write` for mode commit)",
    404: "not found, or the token cannot see it",
    422: "GitHub rejected the request (a line outside the diff, or a stale commit)",
}


class ApiError(Exception):
    """One line: what was asked, what GitHub answered, what it likely means."""


class GitHub:
    def __init__(self, token: str, repo: str, api_url: str = "https://api.github.com") -> None:
        self.token = token
        self.repo = repo
        self.api_url = api_url.rstrip("/")

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """``path`` relative to the repository (``/pulls/1``) or absolute (``https://...``)."""
        url = path if path.startswith("http") else f"{self.api_url}/repos/{self.repo}{path}"
        return self._send(method, url, body)[0]

    def paginate(self, path: str) -> list[Any]:
        url: str | None = f"{self.api_url}/repos/{self.repo}{path}"
        sep = "&" if "?" in path else "?"
        url = f"{url}{sep}per_page=100"
        items: list[Any] = []
        while url:
            page, headers = self._send("GET", url, None)
            items.extend(page if isinstance(page, list) else [])
            url = _next_link(headers.get("Link", ""))
        return items

    def _send(self, method: str, url: str, body: Any) -> tuple[Any, Message]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "rnnfix-ci")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        short = f"{method} {url.removeprefix(self.api_url)}"
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return (json.loads(raw) if raw.strip() else None), resp.headers
        except urllib.error.HTTPError as exc:
            raise ApiError(_http_message(short, exc)) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(f"GitHub API: {short}: cannot reach {self.api_url}: {reason}") from None
        except json.JSONDecodeError:
            raise ApiError(f"GitHub API: {short}: the answer is not JSON") from None


def _http_message(short: str, exc: urllib.error.HTTPError) -> str:
    try:
        detail = str(json.loads(exc.read() or b"{}").get("message", "")).splitlines()[0]
    except (ValueError, AttributeError, IndexError, OSError):
        detail = ""
    headers = exc.headers
    if (
        exc.code in (403, 429)
        and headers is not None
        and (headers.get("X-RateLimit-Remaining") == "0" or headers.get("Retry-After"))
    ):
        reset = headers.get("X-RateLimit-Reset")
        when = (
            time.strftime(" (resets at %H:%M UTC)", time.gmtime(int(reset)))
            if reset and reset.isdigit()
            else ""
        )
        return f"GitHub API: {short}: {exc.code} rate limit exceeded{when}"
    hint = _HINTS.get(exc.code, "")
    parts = [f"GitHub API: {short}: {exc.code} {exc.reason}", detail, hint]
    return ": ".join(p for p in parts if p)


def _next_link(header: str) -> str | None:
    match = re.search(r'<([^>]+)>;\s*rel="next"', header)
    return match.group(1) if match else None
