"""Our Lichess client on aiohttp: one session, bearer token, ndjson streams, errors classified once.

Error classes (decided here and nowhere else):
- 401/403: `AuthError`, fatal for the whole bot.
- 429: that kind of request only (e.g. the moves of one game) pauses for at least
  `rate_limit_pause_s`, then retries; other kinds keep going. The body may be HTML.
- 5xx and network errors: retried with capped, jittered exponential backoff.
- Other 4xx: `RequestError` with the server's message, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)

STREAM_OPENS_PER_WINDOW: Final = 25  # Lichess allows 30 event-stream opens per 10 min per token
STREAM_OPEN_WINDOW_S: Final = 600.0


def version() -> str:
    try:
        return metadata.version("kibitz")
    except metadata.PackageNotFoundError:
        return "0+unknown"


USER_AGENT: Final = f"Kibitz/{version()}"


class LichessError(Exception):
    """Base of every error this client raises."""


class AuthError(LichessError):
    """401/403: the token is missing, revoked or lacks a scope. Fatal."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class RequestError(LichessError):
    """A 4xx (other than 401/403/429) the server gave as its final answer."""

    def __init__(self, status: int, message: str, path: str, body: str = "") -> None:
        super().__init__(f"HTTP {status} on {path}: {message}")
        self.status = status
        self.message = message
        self.path = path
        self.body = body  # the raw reply (a 400 may carry a `ratelimit` object)


class Unavailable(LichessError):
    """The server kept failing (5xx, network, 429) until the request's deadline."""

    def __init__(self, message: str, body: str = "") -> None:
        super().__init__(message)
        self.body = body  # the last reply (a 429 may carry a `ratelimit` object)


@dataclass(frozen=True, slots=True)
class ClientTimings:
    """Every tunable of the client, in seconds."""

    request_timeout_s: float = 5.0  # one short HTTP command (move, chat, accept, …)
    stream_read_timeout_s: float = 20.0  # silence (no byte, no keep-alive) before a reopen
    rate_limit_pause_s: float = 60.0  # minimum wait after a 429, per kind of request
    backoff_base_s: float = 0.25  # first retry delay after a 5xx or network error
    backoff_cap_s: float = 15.0  # longest single retry delay
    retry_deadline_s: float = 60.0  # give up on a command after this long
    moves_per_minute: float = 160.0  # all games together, below Lichess's 180 per minute
    move_burst: int = 20  # moves that may go at once before the pace applies


class MovePacer:
    """A token bucket shared by every game's moves, so many games at once never earn a 429
    (which would pause a game's moves for a minute and lose it on time)."""

    def __init__(self, per_minute: float, burst: int) -> None:
        self.rate_per_s = per_minute / 60.0
        self.capacity = float(max(1, burst))
        self._tokens = self.capacity
        self._updated = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate_per_s)
        self._updated = now

    async def take(self) -> float:
        """Wait for a token; the seconds waited."""
        waited_s = 0.0
        self._refill()
        while self._tokens < 1.0:
            wait_s = (1.0 - self._tokens) / self.rate_per_s
            await asyncio.sleep(wait_s)
            waited_s += wait_s
            self._refill()
        self._tokens -= 1.0
        return waited_s


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """Yielded by `follow` each time a stream is (re)opened: what comes next may repeat."""

    attempt: int


def backoff_delay_s(attempt: int, base_s: float, cap_s: float) -> float:
    """Capped exponential backoff with equal jitter: half fixed, half random."""
    ceiling = min(cap_s, base_s * (2.0**attempt))
    return ceiling / 2.0 + random.uniform(0.0, ceiling / 2.0)


def error_message(body: str) -> str:
    """The `error` text of a Lichess error body, or a short cut of a non-JSON (HTML) body."""
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:120] or "(empty body)"
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, str):
            return error
        if error is not None:
            return json.dumps(error)[:200]
    return json.dumps(data)[:200]


def rate_limit_wait_s(body: str, headers: Mapping[str, str], floor_s: float) -> float:
    """How long a 429 asks us to wait: the floor, or longer if the body or a header says so."""
    wait_s = floor_s
    retry_after = headers.get("Retry-After")
    if retry_after is not None:
        with contextlib.suppress(ValueError):
            wait_s = max(wait_s, float(retry_after))
    try:
        data = json.loads(body)
    except ValueError:
        return wait_s
    if isinstance(data, Mapping):
        limit = data.get("ratelimit")
        if isinstance(limit, Mapping):
            seconds = limit.get("seconds")
            if isinstance(seconds, int | float) and not isinstance(seconds, bool):
                wait_s = max(wait_s, float(seconds))
    return wait_s


class Lichess:
    """The HTTP client. Create it inside a running loop; close it (or use `async with`)."""

    def __init__(
        self, base_url: str, token: str, *, timings: ClientTimings | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timings = timings or ClientTimings()
        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT},
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
        )
        self._token = token
        self._blocked_until: dict[str, float] = {}
        self.move_pacer = MovePacer(self.timings.moves_per_minute, self.timings.move_burst)
        self._stream_opens: dict[str, deque[float]] = {}

    async def __aenter__(self) -> Lichess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._session.close()

    # --- rate-limit bookkeeping, per kind of request -------------------------------------------

    def blocked_for_s(self, kind: str) -> float:
        return max(0.0, self._blocked_until.get(kind, 0.0) - time.monotonic())

    def _block(self, kind: str, wait_s: float) -> None:
        until = time.monotonic() + wait_s
        self._blocked_until[kind] = max(self._blocked_until.get(kind, 0.0), until)

    async def _wait_unblocked(self, kind: str) -> None:
        while (wait_s := self.blocked_for_s(kind)) > 0:
            log.info("%s is rate limited: waiting %.1f s", kind, wait_s)
            await asyncio.sleep(wait_s)

    # --- one command, with retries ----------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        kind: str,
        data: Mapping[str, str] | str | None = None,
        params: Mapping[str, str] | None = None,
        deadline_s: float | None = None,
    ) -> Any:
        """Send one command, retrying what is worth retrying; the decoded JSON reply (or None)."""
        loop_deadline = time.monotonic() + (
            self.timings.retry_deadline_s if deadline_s is None else deadline_s
        )
        timeout = aiohttp.ClientTimeout(total=self.timings.request_timeout_s)
        attempt = 0
        while True:
            await self._wait_unblocked(kind)
            problem: str
            try:
                async with self._session.request(
                    method, self.base_url + path, data=data, params=params,
                    timeout=timeout,
                ) as resp:
                    body = await resp.text()
                    status = resp.status
                    resp_headers = dict(resp.headers)
            except (aiohttp.ClientError, TimeoutError) as exc:
                problem = f"network error: {type(exc).__name__}: {exc}"
            else:
                if 200 <= status < 300:
                    try:
                        return json.loads(body) if body.strip() else None
                    except ValueError:
                        return None
                if status in (401, 403):
                    raise AuthError(status, error_message(body))
                if status == 429:
                    wait_s = rate_limit_wait_s(body, resp_headers, self.timings.rate_limit_pause_s)
                    log.warning("429 on %s %s (%s): pausing %s for %.0f s",
                                method, path, error_message(body), kind, wait_s)
                    self._block(kind, wait_s)
                    if time.monotonic() + wait_s > loop_deadline:
                        raise Unavailable(f"{method} {path}: rate limited past its deadline",
                                          body)
                    continue
                if status < 500:
                    raise RequestError(status, error_message(body), path, body)
                problem = f"HTTP {status}: {error_message(body)}"
            delay_s = backoff_delay_s(
                attempt, self.timings.backoff_base_s, self.timings.backoff_cap_s
            )
            if time.monotonic() + delay_s > loop_deadline:
                raise Unavailable(f"{method} {path}: {problem} (gave up after {attempt + 1} tries)")
            log.info("%s %s: %s; retry in %.2f s", method, path, problem, delay_s)
            attempt += 1
            await asyncio.sleep(delay_s)

    # --- ndjson streams ----------------------------------------------------------------------

    async def _limit_opens(self, kind: str) -> None:
        opens = self._stream_opens.setdefault(kind, deque())
        now = time.monotonic()
        while opens and now - opens[0] > STREAM_OPEN_WINDOW_S:
            opens.popleft()
        if len(opens) >= STREAM_OPENS_PER_WINDOW:
            wait_s = STREAM_OPEN_WINDOW_S - (now - opens[0])
            log.warning("%s reopened %d times in 10 min: waiting %.0f s", kind, len(opens), wait_s)
            await asyncio.sleep(wait_s)
        opens.append(time.monotonic())

    async def stream_once(self, path: str, *, kind: str) -> AsyncIterator[Any]:
        """One connection to an ndjson stream: decoded lines until it ends or falls silent.

        Keep-alive empty lines are skipped; a line that is not JSON is logged and skipped.
        Raises `AuthError`, `RequestError` (4xx), `Unavailable` (5xx) or a network error.
        """
        await self._wait_unblocked(kind)
        await self._limit_opens(kind)
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.timings.request_timeout_s,
            sock_read=self.timings.stream_read_timeout_s,
        )
        async with self._session.get(self.base_url + path, timeout=timeout) as resp:
            if resp.status != 200:
                body = await resp.text()
                if resp.status in (401, 403):
                    raise AuthError(resp.status, error_message(body))
                if resp.status == 429:
                    wait_s = rate_limit_wait_s(
                        body, dict(resp.headers), self.timings.rate_limit_pause_s
                    )
                    self._block(kind, wait_s)
                    raise Unavailable(f"GET {path}: 429 {error_message(body)}")
                if resp.status < 500:
                    raise RequestError(resp.status, error_message(body), path)
                raise Unavailable(f"GET {path}: HTTP {resp.status}: {error_message(body)}")
            async for raw_line in resp.content:
                line = raw_line.strip()
                if not line:
                    continue  # keep-alive
                try:
                    yield json.loads(line)
                except ValueError:
                    log.warning("%s: skipped a line that is not JSON: %.100r", path, line)

    async def follow(self, path: str, *, kind: str) -> AsyncIterator[Any]:
        """An ndjson stream that reopens itself after silence, a drop, a 5xx or a 429.

        Yields `StreamOpened` before the lines of every connection. Ends only by an exception
        (`AuthError`, `RequestError`) or when the consumer stops iterating.
        """
        attempt = 0
        failures = 0
        while True:
            yield StreamOpened(attempt)
            attempt += 1
            got_line = False
            try:
                async for item in self.stream_once(path, kind=kind):
                    got_line = True
                    yield item
                problem = "closed by the server"
            except (aiohttp.ClientError, TimeoutError, Unavailable) as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            failures = 0 if got_line else failures + 1
            delay_s = backoff_delay_s(
                failures, self.timings.backoff_base_s, self.timings.backoff_cap_s
            )
            log.info("stream %s %s; reopening in %.2f s", path, problem, delay_s)
            await asyncio.sleep(delay_s)

    def follow_events(self) -> AsyncIterator[Any]:
        return self.follow("/api/stream/event", kind="stream:event")

    def follow_game(self, game_id: str) -> AsyncIterator[Any]:
        return self.follow(f"/api/bot/game/stream/{quote(game_id)}", kind=f"stream:game:{game_id}")

    # --- account ------------------------------------------------------------------------------

    async def account(self) -> dict[str, Any]:
        data = await self.request("GET", "/api/account", kind="account")
        if not isinstance(data, dict):
            raise LichessError("/api/account did not return an object")
        return data

    async def token_scopes(self) -> set[str] | None:
        """The token's scopes by `POST /api/token/test`; None if the server lacks that endpoint."""
        try:
            data = await self.request(
                "POST", "/api/token/test", kind="token", data=self._token
            )
        except RequestError as exc:
            if exc.status == 404:
                return None
            raise
        if not isinstance(data, Mapping):
            raise LichessError("/api/token/test did not return an object")
        info = data.get(self._token)
        if info is None:
            raise AuthError(401, "the token is unknown or expired")
        if not isinstance(info, Mapping):
            raise LichessError("/api/token/test: unexpected entry for the token")
        scopes = info.get("scopes", "")
        return {s.strip() for s in str(scopes).split(",") if s.strip()}

    # --- challenges ---------------------------------------------------------------------------

    async def accept_challenge(self, challenge_id: str) -> None:
        await self.request(
            "POST", f"/api/challenge/{quote(challenge_id)}/accept", kind="challenge",
            deadline_s=10.0,
        )

    async def decline_challenge(self, challenge_id: str, reason: str) -> None:
        await self.request(
            "POST", f"/api/challenge/{quote(challenge_id)}/decline", kind="challenge",
            data={"reason": reason}, deadline_s=10.0,
        )

    # --- game commands ------------------------------------------------------------------------

    def _game_path(self, game_id: str, tail: str) -> str:
        return f"/api/bot/game/{quote(game_id)}/{tail}"

    async def move(
        self, game_id: str, uci: str, *, offering_draw: bool = False,
        deadline_s: float | None = None,
    ) -> None:
        params = {"offeringDraw": "true"} if offering_draw else None
        waited_s = await self.move_pacer.take()
        if waited_s > 0:
            log.log(logging.INFO if waited_s >= 1.0 else logging.DEBUG,
                    "game %s: move held %.2f s to keep under the moves-per-minute limit",
                    game_id, waited_s)
        await self.request(
            "POST", self._game_path(game_id, f"move/{quote(uci)}"), kind=f"move:{game_id}",
            params=params, deadline_s=deadline_s,
        )

    async def chat(self, game_id: str, room: str, text: str) -> None:
        await self.request(
            "POST", self._game_path(game_id, "chat"), kind=f"chat:{game_id}",
            data={"room": room, "text": text}, deadline_s=10.0,
        )

    async def abort(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "abort"), kind=f"game:{game_id}",
                           deadline_s=10.0)

    async def resign(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "resign"), kind=f"game:{game_id}",
                           deadline_s=10.0)

    async def answer_draw(self, game_id: str, accept: bool) -> None:
        await self.request(
            "POST", self._game_path(game_id, "draw/" + ("yes" if accept else "no")),
            kind=f"game:{game_id}", deadline_s=10.0,
        )

    async def answer_takeback(self, game_id: str, accept: bool) -> None:
        await self.request(
            "POST", self._game_path(game_id, "takeback/" + ("yes" if accept else "no")),
            kind=f"game:{game_id}", deadline_s=10.0,
        )

    async def claim_victory(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "claim-victory"),
                           kind=f"game:{game_id}", deadline_s=10.0)
