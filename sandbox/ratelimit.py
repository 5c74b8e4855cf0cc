"""Rate limits shaped like lila's: sliding windows, 429 bodies in JSON or HTML."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from sandbox.errors import json_response

GENERIC_LIMIT = "Too many requests. Try again later."
EVENT_STREAM_LIMIT = (
    "Please don't poll this endpoint, it is intended to be streamed. "
    "See https://lichess.org/api#tag/Board/operation/apiStreamEvent."
)
ACCOUNT_LIMIT = (
    "Please don't poll this endpoint. Stream "
    "https://lichess.org/api#tag/Board/operation/apiStreamEvent instead."
)
DAY_S = 86_400.0
MINUTE_S = 60.0

HTML_429 = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>429 Too Many Requests</title></head>
<body><h1>429 Too Many Requests</h1><p>{message}</p></body></html>
"""


@dataclass(frozen=True)
class RateLimits:
    """Every limit the sandbox enforces; the defaults are lichess's."""

    event_stream_opens: int = 30
    event_stream_window_s: float = 600.0
    account_reads: int = 30
    account_window_s: float = 300.0
    challenge_credits_per_minute: int = 25
    challenge_credits_per_day: int = 200
    challenge_cost_bot: int = 1
    challenge_cost_human: int = 5
    bot_games_per_day: int = 100
    # Every request of one token, together. lila's own source has no per-request limit on
    # bot moves (app/controllers/PlayApi.scala `botMove`); lichess.org answers a token
    # past about 180 requests a minute from its proxy, with a 429 that carries no
    # `ratelimit` object, often as an HTML page.
    requests_per_minute: int = 180
    html_bodies: bool = False  # answer 429 with an HTML page, as lichess sometimes does


class SlidingWindow:
    """At most `limit` units of cost per key within any `window_s` seconds."""

    def __init__(
        self, limit: int, window_s: float, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._now = now
        self._spent: dict[str, deque[tuple[float, int]]] = {}

    def _used(self, key: str) -> deque[tuple[float, int]]:
        spent = self._spent.setdefault(key, deque())
        horizon = self._now() - self.window_s
        while spent and spent[0][0] <= horizon:
            spent.popleft()
        return spent

    def wait_s(self, key: str, cost: int = 1) -> float:
        """Seconds until `cost` more would fit; 0 if it fits now."""
        spent = self._used(key)
        used = sum(c for _, c in spent)
        if used + cost <= self.limit:
            return 0.0
        freed = 0
        for at_s, c in spent:
            freed += c
            if used - freed + cost <= self.limit:
                return max(at_s + self.window_s - self._now(), 0.0)
        return self.window_s

    def consume(self, key: str, cost: int = 1) -> float:
        """Spend `cost` if it fits and return 0, else return the seconds to wait."""
        wait = self.wait_s(key, cost)
        if wait == 0.0:
            self._spent[key].append((self._now(), cost))
        return wait

    def count(self, key: str) -> int:
        return sum(c for _, c in self._used(key))


class FixedWindow:
    """At most `limit` units per key in a window that opens with the first unit and lasts
    `window_s` (lila modules/memo RateLimit.scala: `clearAt` is set by the first charge
    and kept by the later ones), not a rolling one."""

    def __init__(
        self, limit: int, window_s: float, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._now = now
        self._spent: dict[str, tuple[int, float]] = {}  # key -> (used, clear_at_s)

    def _used(self, key: str) -> tuple[int, float]:
        used, clear_at_s = self._spent.get(key, (0, 0.0))
        if used and self._now() >= clear_at_s:
            del self._spent[key]
            return 0, 0.0
        return used, clear_at_s

    def wait_s(self, key: str, cost: int = 1) -> float:
        """Seconds until `cost` more would fit; 0 if it fits now."""
        used, clear_at_s = self._used(key)
        if used + cost <= self.limit:
            return 0.0
        return max(clear_at_s - self._now(), 0.0) if used else self.window_s

    def consume(self, key: str, cost: int = 1) -> float:
        """Spend `cost` if it fits and return 0, else return the seconds to wait."""
        wait = self.wait_s(key, cost)
        if wait == 0.0:
            used, clear_at_s = self._used(key)
            self._spent[key] = (used + cost,
                                clear_at_s if used else self._now() + self.window_s)
        return wait

    def count(self, key: str) -> int:
        return self._used(key)[0]


def too_many(message: str, key: str | None, wait_s: float, html: bool,
             status: int = 429) -> web.Response:
    """A 429 (or 400) reply with lila's `Limited` body, or an HTML page.

    lila sends no Retry-After header, so neither does the sandbox.
    """
    if html:
        return web.Response(text=HTML_429.format(message=message), status=status,
                            content_type="text/html")
    body: dict[str, object] = {"error": message}
    if key is not None:
        body["ratelimit"] = {"key": key, "seconds": max(math.ceil(wait_s), 0)}
    return json_response(body, status=status)


class Limiters:
    """The sandbox's limiters, built from one RateLimits."""

    def __init__(self, limits: RateLimits, now: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.event_stream = SlidingWindow(
            limits.event_stream_opens, limits.event_stream_window_s, now)
        self.account = SlidingWindow(limits.account_reads, limits.account_window_s, now)
        self.challenge_minute = SlidingWindow(limits.challenge_credits_per_minute, MINUTE_S, now)
        self.challenge_day = SlidingWindow(limits.challenge_credits_per_day, DAY_S, now)
        # The bot-game day opens with the first game and lasts 24 h (fixed, not rolling).
        self.bot_games = FixedWindow(limits.bot_games_per_day, DAY_S, now)
        self.requests = SlidingWindow(limits.requests_per_minute, MINUTE_S, now)
