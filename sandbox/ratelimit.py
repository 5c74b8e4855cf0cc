"""Rate limits shaped like lila's: lila's own RateLimit, the proxy's sliding window in front
of it, and 429 bodies in JSON or HTML."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
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
# lila counts time in milliseconds: a refused charge passes a millisecond past clearAt.
MILLISECOND_S = 0.001

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


class LilaRateLimit:
    """lila's RateLimit (modules/memo/src/main/RateLimit.scala), boundaries and all.

    Each key holds (credits used, clearAt) in a cache that forgets it `window_s` after its
    last write (`expireAfterWrite`). A charge passes while the credits used are below the
    limit (`a < credits`: the charge that crosses the limit still passes, whatever its
    cost), or once the clock is strictly past clearAt (`nowMillis > clearAt`: a new window
    from this charge). The window opens with the first charge and is not moved by later
    ones; it is not a rolling window.
    """

    def __init__(
        self, limit: int, window_s: float, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._now = now
        # key -> (credits used, clear_at_s, last written at)
        self._entries: dict[str, tuple[int, float, float]] = {}

    def _entry(self, key: str) -> tuple[int, float] | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self._now() - entry[2] >= self.window_s:  # Caffeine expireAfterWrite
            del self._entries[key]
            return None
        return entry[0], entry[1]

    def wait_s(self, key: str, cost: int = 1) -> float:
        """Seconds until a charge of `cost` would pass; 0 if it passes now."""
        entry = self._entry(key)
        if cost < 1 or entry is None:
            return 0.0
        used, clear_at_s = entry
        now = self._now()
        if used < self.limit or now > clear_at_s:
            return 0.0
        # It passes once the clock is past clearAt: lila counts in milliseconds.
        return max(clear_at_s - now, 0.0) + MILLISECOND_S

    def consume(self, key: str, cost: int = 1) -> float:
        """Charge `cost` if it passes and return 0, else return the seconds to wait."""
        wait = self.wait_s(key, cost)
        if wait or cost < 1:
            return wait
        now = self._now()
        entry = self._entry(key)
        if entry is None or (entry[0] >= self.limit and now > entry[1]):
            self._entries[key] = (cost, now + self.window_s, now)
        else:
            self._entries[key] = (entry[0] + cost, entry[1], now)
        return 0.0

    def count(self, key: str) -> int:
        entry = self._entry(key)
        return 0 if entry is None else entry[0]

    def clear_at_s(self, key: str) -> float | None:
        entry = self._entry(key)
        return None if entry is None else entry[1]


def consume_all(limits: Sequence[LilaRateLimit], key: str, cost: int = 1) -> float:
    """lila RateLimit.composite: charge each limit in turn and stop at the first that
    refuses; the ones before it keep their charge. 0 if all passed, else that wait."""
    for limit in limits:
        wait = limit.consume(key, cost)
        if wait:
            return wait
    return 0.0


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
    """The sandbox's limiters, built from one RateLimits.

    Those lila keeps (modules/web/src/main/Limiters.scala: eventStream per bearer,
    apiMe per user, challengeUser's composite "fast" and "slow" per user; BotLimit's
    bot-game day) are lila's RateLimit; the overall per-token limit of the proxy in front
    of lila is a sliding window."""

    def __init__(self, limits: RateLimits, now: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.event_stream = LilaRateLimit(
            limits.event_stream_opens, limits.event_stream_window_s, now)
        self.account = LilaRateLimit(limits.account_reads, limits.account_window_s, now)
        self.challenge_minute = LilaRateLimit(
            limits.challenge_credits_per_minute, MINUTE_S, now)
        self.challenge_day = LilaRateLimit(limits.challenge_credits_per_day, DAY_S, now)
        # modules/bot/src/main/BotLimit.scala: bot-vs-bot games a day, from the first game.
        self.bot_games = LilaRateLimit(limits.bot_games_per_day, DAY_S, now)
        self.requests = SlidingWindow(limits.requests_per_minute, MINUTE_S, now)
