"""GitHub's REST API for the bot (``api.Api`` with GitHub's headers, paths
relative to the repository, and the hints its errors need)."""

from __future__ import annotations

from typing import Any

from rnnfix.ci.api import Api, ApiError, Pace

__all__ = ["ApiError", "GitHub", "Pace", "read_only"]

# GitHub's answer when the token may not write (a fork's pull request under
# ``pull_request``, or a workflow without the permission).
NOT_ACCESSIBLE = "resource not accessible by integration"


def read_only(exc: ApiError) -> bool:
    return exc.status == 403 and NOT_ACCESSIBLE in exc.detail.lower()


class GitHub(Api):
    name = "GitHub API"
    hints = {
        401: "the token is missing, expired or invalid",
        403: "the token lacks a permission (the workflow needs `pull-requests: write`, "
        "and `contents: write` for mode commit)",
        404: "not found, or the token cannot see it",
        422: "GitHub rejected the request (a line outside the diff, or a stale commit)",
    }

    def __init__(
        self,
        token: str,
        repo: str,
        api_url: str = "https://api.github.com",
        pace: Pace | None = None,
    ) -> None:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "rnnfix-ci",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        super().__init__(api_url, headers, pace)
        self.repo = repo

    def _url(self, path: str) -> str:
        return path if path.startswith("http") else f"{self.api_url}/repos/{self.repo}{path}"

    def request(self, method: str, url: str, body: Any = None) -> Any:
        """``url`` relative to the repository (``/pulls/1``) or absolute."""
        return super().request(method, self._url(url), body)

    def paginate(self, url: str, per_page: int = 100) -> list[Any]:
        return super().paginate(self._url(url), per_page)
