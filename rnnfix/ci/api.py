"""A small JSON REST client on ``urllib`` (GitHub's and GitLab's APIs): JSON in
and out, ``Link`` pagination, paced writes, retries on rate limits, and every
failure as an ``ApiError`` whose message is one line a person can act on.

Pacing and retries follow GitHub's documented limits: content-creating
requests (POST, PATCH, PUT, DELETE) at most 80 a minute and 500 an hour, at
least a second apart; a ``403``/``429`` with ``Retry-After`` is retried after
that many seconds, one with ``x-ratelimit-remaining: 0`` after
``x-ratelimit-reset``, a secondary rate limit without either after a minute,
then exponentially longer. Only rate-limit answers are retried: GitHub did
not act on those requests, so a retry cannot duplicate a write. Time comes
from a ``Pace`` so tests wait nothing."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})


@dataclass
class Pace:
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    # GitHub: "wait at least one second between each request" that creates
    # content; 60 a minute stays under the 80-a-minute secondary limit.
    write_interval: float = 1.0
    retries: int = 5
    max_wait: float = 300.0  # a longer wait (an hourly limit) fails the step instead
    waits: list[float] = field(default_factory=list)  # what was slept, for the log


class ApiError(Exception):
    """One line: what was asked, what the server answered, what it likely means."""

    def __init__(self, message: str, status: int = 0, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class Api:
    name = "API"
    hints: Mapping[int, str] = {}

    def __init__(self, base_url: str, headers: Mapping[str, str], pace: Pace | None = None) -> None:
        self.api_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.pace = pace or Pace()
        self._last_write: float | None = None

    def send(self, method: str, url: str, body: Any = None) -> tuple[Any, Message]:
        if not url.startswith("http"):
            url = self.api_url + url
        short = f"{method} {url.removeprefix(self.api_url)}"
        attempt = 0
        while True:
            if method in WRITES:
                self._wait_to_write()
            try:
                return self._once(method, url, body)
            except urllib.error.HTTPError as exc:
                detail = _detail(exc)
                wait = self._retry_wait(exc.code, exc.headers, detail, attempt)
                if wait is None or attempt >= self.pace.retries or wait > self.pace.max_wait:
                    raise ApiError(
                        self._message(short, exc.code, exc.reason, exc.headers, detail),
                        exc.code,
                        detail,
                    ) from None
                self._sleep(wait)
                attempt += 1
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise ApiError(
                    f"{self.name}: {short}: cannot reach {self.api_url}: {reason}"
                ) from None
            except json.JSONDecodeError:
                raise ApiError(f"{self.name}: {short}: the answer is not JSON") from None

    def request(self, method: str, url: str, body: Any = None) -> Any:
        return self.send(method, url, body)[0]

    def paginate(self, url: str, per_page: int = 100) -> list[Any]:
        sep = "&" if "?" in url else "?"
        next_url: str | None = f"{url}{sep}per_page={per_page}"
        items: list[Any] = []
        while next_url:
            page, headers = self.send("GET", next_url)
            items.extend(page if isinstance(page, list) else [])
            next_url = _next_link(headers.get("Link", ""))
        return items

    def _once(self, method: str, url: str, body: Any) -> tuple[Any, Message]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        for key, value in self.headers.items():
            req.add_header(key, value)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return (json.loads(raw) if raw.strip() else None), resp.headers

    def _wait_to_write(self) -> None:
        now = self.pace.monotonic()
        if self._last_write is not None:
            gap = self._last_write + self.pace.write_interval - now
            if gap > 0:
                self._sleep(gap)
                now = self.pace.monotonic()
        self._last_write = now

    def _sleep(self, seconds: float) -> None:
        self.pace.waits.append(seconds)
        self.pace.sleep(seconds)

    def _retry_wait(
        self, status: int, headers: Message | None, detail: str, attempt: int
    ) -> float | None:
        """Seconds to wait before retrying, or None: not a rate limit."""
        if status not in (403, 429):
            return None

        def get(key: str) -> str:
            return str((headers.get(key) if headers is not None else None) or "").strip()

        after = get("Retry-After")
        if after.isdigit():
            return float(after)
        reset = get("X-RateLimit-Reset")
        if get("X-RateLimit-Remaining") == "0" and reset.isdigit():
            return max(0.0, int(reset) - self.pace.wall()) + 1.0
        if status == 429 or "secondary rate limit" in detail.lower():
            return 60.0 * float(1 << attempt)
        return None

    def _message(
        self, short: str, status: int, reason: str, headers: Message | None, detail: str
    ) -> str:
        if self._retry_wait(status, headers, detail, 0) is not None:
            reset = headers.get("X-RateLimit-Reset") if headers is not None else None
            when = (
                time.strftime(" (resets at %H:%M UTC)", time.gmtime(int(reset)))
                if reset and reset.isdigit()
                else ""
            )
            return f"{self.name}: {short}: {status} rate limit exceeded{when}"
        parts = [f"{self.name}: {short}: {status} {reason}", detail, self.hints.get(status, "")]
        return ": ".join(p for p in parts if p)


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return ""
    message = data.get("message", "") if isinstance(data, dict) else ""
    lines = str(message).splitlines()
    return lines[0] if lines else ""


def _next_link(header: str) -> str | None:
    match = re.search(r'<([^>]+)>;\s*rel="next"', header)
    return match.group(1) if match else None
