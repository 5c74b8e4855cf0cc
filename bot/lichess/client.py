"""Our Lichess client on aiohttp: one session, bearer token, ndjson streams, errors classified once.

Every Lichess path the running bot uses is written here, behind a typed method; what an
answer about the account means is read in bot.lichess.account, which also holds the command
line's one-shot calls (through berserk).

Error classes (decided in `classify`, for commands and streams alike):
- 401/403: `AuthError`, fatal for the whole bot.
- 429: that endpoint only (e.g. the moves of one game, or challenge accepts) pauses, then
  retries; other endpoints keep going. The body may be HTML with no `ratelimit` object.
  A move's 429 pauses `move_retry_s` (its clock is running), anything else at least
  `rate_limit_pause_s`. A request never sleeps past its own deadline: a pause that would
  outlast it raises `RateLimited` at once. A 429 keyed `bot.vsBot.day` is our daily cap on
  games against bots, not a block of the endpoint: it is raised at once (people's
  challenges are still accepted).
- 5xx and network errors: retried with capped, jittered exponential backoff.
- Other 4xx: `RequestError` with the server's message, never retried.
- An `optional` request (a chat line) is worth little: at most `OPTIONAL_RETRIES` retries
  after a 5xx or a network error, and a 429 pauses its endpoint but is not waited out.

Every request draws on one `RequestBudget` (Lichess allows a token about 180 requests a
minute in all): moves first, other commands keep a reserve free for moves, and chat lines
are sent only while the budget has room (`chat` answers False when it dropped the line).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import random
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final, Protocol
from urllib.parse import quote

import aiohttp

log = logging.getLogger(__name__)

BOT_DAY_KEY: Final = "bot.vsBot.day"  # lila's BotLimit key: our (429) or their (400) day cap
COMMAND_AGING_S: Final = 2.0  # a command waiting this long for the budget goes as a move
STREAM_OPENS_PER_WINDOW: Final = 25  # Lichess allows 30 event-stream opens per 10 min per token
STREAM_OPEN_WINDOW_S: Final = 600.0
GAME_STREAM_KIND: Final = "stream:game:"
COMMAND_DEADLINE_S: Final = 10.0  # a game or challenge command retries at most this long
LIST_DEADLINE_S: Final = 30.0  # a listing (our games in progress) retries at most this long
# A chat line lost costs little; retrying it is noise against the token's request limit.
OPTIONAL_RETRIES: Final = 2
# Chat lines of every game pause together after a 429 on one: lichess-bot blocks the path
# template (lib/lichess.py), and lila's limits behind a 429 there are the token's, not a game's.
CHAT_KIND: Final = "chat"


def version() -> str:
    try:
        return metadata.version("kibitz")
    except metadata.PackageNotFoundError:
        return "0+unknown"


USER_AGENT: Final = f"Kibitz/{version()}"

# Lichess paths read without the bot's token, through the features' own session.
CLOUD_EVAL_PATH: Final = "/api/cloud-eval"


def export_path(game_id: str) -> str:
    """The PGN export of a game (`GET /game/export/{id}`)."""
    return f"/game/export/{quote(game_id)}"


class LichessError(Exception):
    """Base of every error this client raises."""


class AuthError(LichessError):
    """401/403: the token is missing, revoked or lacks a scope. Fatal."""

    def __init__(self, status: int, message: str, body: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.body = body  # the raw reply (a playban's 403 carries `minutes`)


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


class RateLimited(Unavailable):
    """A 429 the request cannot wait out before its deadline, or our daily cap on bot games
    (`key` `bot.vsBot.day`); `wait_s` is how long the server (or our own pause) asks for."""

    def __init__(self, message: str, body: str, key: str | None, wait_s: float) -> None:
        super().__init__(message, body)
        self.key = key
        self.wait_s = wait_s


class Dropped(LichessError):
    """An optional request (a chat line) not sent: the request budget had no room for it."""


@dataclass(frozen=True, slots=True)
class ClientTimings:
    """Every tunable of the client, in seconds."""

    request_timeout_s: float = 5.0  # one short HTTP command (move, chat, accept, …)
    # Silence (no byte, no keep-alive line) before a stream is reopened: about two missed
    # keep-alives. lila writes one every 6 s on the event stream (EventStream.scala) and every
    # 7 s on a game stream (GameStateStream.scala); 20 s cost up to 20 s of our clock, and
    # challenges that lila sweeps offline after 20 s unseen.
    event_stream_silence_s: float = 2 * 6.0 + 0.5
    game_stream_silence_s: float = 2 * 7.0 + 0.5
    rate_limit_pause_s: float = 60.0  # minimum wait after a 429, per kind of request
    backoff_base_s: float = 0.25  # first retry delay after a 5xx or network error
    backoff_cap_s: float = 15.0  # longest single retry delay
    retry_deadline_s: float = 60.0  # give up on a command after this long
    move_retry_s: float = 1.0  # a move's 429: its clock runs, so try again this soon
    requests_per_minute: float = 160.0  # every request together, below Lichess's ~180
    request_burst: int = 20  # requests that may go at once before the pace applies
    move_reserve: int = 4  # tokens other commands leave for moves
    chat_reserve: int = 5  # tokens a PV line leaves (more than commands): else it is dropped


class Priority(enum.IntEnum):
    """Who goes first when the request budget is tight."""

    MOVE = 0  # a game's clock is running
    COMMAND = 1  # accept, decline, abort, resign, answers, reads
    CHAT = 2  # optional (a PV line): dropped when the budget is tight


class RequestBudget:
    """One token bucket for every request of the token, so many games at once never earn a
    429. Moves may take the last token; other commands leave `move_reserve` tokens; chat
    leaves `chat_reserve` and never waits. `now` and `sleep` are injectable for tests."""

    def __init__(
        self, per_minute: float, burst: int, *, move_reserve: int = 0, chat_reserve: int = 0,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.rate_per_s = per_minute / 60.0
        self.capacity = float(max(1, burst))
        self.reserve = {Priority.MOVE: 0.0,
                        Priority.COMMAND: float(min(move_reserve, burst - 1)),
                        Priority.CHAT: float(min(max(chat_reserve, move_reserve), burst - 1))}
        self._now = now
        self._sleep = sleep
        self._tokens = self.capacity
        self._updated = now()
        self.spent: dict[Priority, int] = dict.fromkeys(Priority, 0)
        self.dropped_chat = 0

    @property
    def tokens(self) -> float:
        self._refill()
        return self._tokens

    def _refill(self) -> None:
        now = self._now()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate_per_s)
        self._updated = now

    def try_take(self, priority: Priority) -> bool:
        """Take a token now if this priority may; never waits."""
        self._refill()
        if self._tokens - self.reserve[priority] < 1.0:
            return False
        self._tokens -= 1.0
        self.spent[priority] += 1
        return True

    async def wait_room(self, priority: Priority) -> None:
        """Wait until this priority could take a token (without taking it)."""
        self._refill()
        while self._tokens - self.reserve[priority] < 1.0:
            await self._sleep((1.0 + self.reserve[priority] - self._tokens) / self.rate_per_s)
            self._refill()

    async def take(self, priority: Priority) -> float:
        """Wait until this priority may take a token; the seconds waited. A command that has
        waited `COMMAND_AGING_S` goes as a move would (aging), so a stream of moves never
        starves a draw answer or an accept."""
        waited_s = 0.0
        while True:
            if priority == Priority.COMMAND and waited_s >= COMMAND_AGING_S:
                priority = Priority.MOVE
            if self.try_take(priority):
                return waited_s
            wait_s = (1.0 + self.reserve[priority] - self._tokens) / self.rate_per_s
            if priority == Priority.COMMAND:
                wait_s = min(wait_s, COMMAND_AGING_S - waited_s)
            await self._sleep(wait_s)
            waited_s += wait_s


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """Yielded by `follow` each time a stream is (re)opened: what comes next may repeat."""

    attempt: int


class Reply(enum.Enum):
    """What an HTTP status means to us."""

    OK = "ok"
    AUTH = "auth"  # 401/403: the token is wrong or lacks a scope
    RATE_LIMITED = "rate limited"  # 429: this kind of request pauses
    REFUSED = "refused"  # another 4xx: the server's final answer
    SERVER_ERROR = "server error"  # 5xx: worth retrying


def classify(status: int) -> Reply:
    if 200 <= status < 300:
        return Reply.OK
    if status in (401, 403):
        return Reply.AUTH
    if status == 429:
        return Reply.RATE_LIMITED
    if status < 500:
        return Reply.REFUSED
    return Reply.SERVER_ERROR


async def attempt(what: str, request: Awaitable[object]) -> bool:
    """Await one command; a refusal or a server out of reach is logged as `what`, not raised
    (an `AuthError` still is). True if the server took it."""
    try:
        await request
    except (RequestError, Unavailable) as exc:
        log.warning("%s: %s", what, exc)
        return False
    return True


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


def ratelimit_key(body: str) -> str | None:
    """The `ratelimit.key` of a Lichess error body (lila's `Limited`), if it has one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    limit = data.get("ratelimit") if isinstance(data, Mapping) else None
    key = limit.get("key") if isinstance(limit, Mapping) else None
    return key if isinstance(key, str) else None


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


EVENT_STREAM_KIND: Final = "stream:event"
# Endpoint kinds that carry a game id (`move:<game>`): counted under the part before it.
PER_GAME_KINDS: Final = ("stream:game", "move", "chat", "game")
TALLY_WINDOW_S: Final = 60.0  # "requests in the last minute"
TALLY_RECENT_KEPT: Final = 10_000  # request times kept for that window, at most


def endpoint_kind(kind: str) -> str:
    """The kind of a request without its game id: `move:abc123` -> `move`."""
    for prefix in PER_GAME_KINDS:
        if kind.startswith(prefix + ":"):
            return prefix
    return kind


class RequestTally:
    """Requests sent and 429s received by endpoint kind, and the times of the last minute's
    requests: what the status page and /metrics show of the request budget."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self.sent: Counter[str] = Counter()
        self.rate_limited: Counter[str] = Counter()
        self._recent: deque[float] = deque(maxlen=TALLY_RECENT_KEPT)

    def request(self, kind: str) -> None:
        self.sent[endpoint_kind(kind)] += 1
        self._recent.append(self._now())

    def too_many(self, kind: str) -> None:
        self.rate_limited[endpoint_kind(kind)] += 1

    def last_minute(self) -> int:
        since = self._now() - TALLY_WINDOW_S
        while self._recent and self._recent[0] < since:
            self._recent.popleft()
        return len(self._recent)


class Commands(Protocol):
    """What a part that only sends commands needs of the client (`Lichess.request`): the
    arena desk takes this, so that a test's fake answers it without a connection."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        kind: str,
        data: Mapping[str, str] | str | None = None,
        params: Mapping[str, str] | None = None,
        deadline_s: float | None = None,
        priority: Priority = Priority.COMMAND,
        optional: bool = False,
    ) -> Any: ...


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
        self.tally = RequestTally()
        self.open_streams: set[str] = set()  # kinds of the ndjson streams connected now
        self.budget = RequestBudget(
            self.timings.requests_per_minute, self.timings.request_burst,
            move_reserve=self.timings.move_reserve, chat_reserve=self.timings.chat_reserve)
        self._stream_opens: dict[str, deque[float]] = {}
        # PV lines waiting for room in the budget, the newest per (game, room): merged.
        self._pending_chat: dict[tuple[str, str], str] = {}
        self._chat_flushers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Lichess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for task in self._chat_flushers:
            task.cancel()
        await self._session.close()

    # --- rate-limit bookkeeping, per endpoint ------------------------------------------------

    def pauses_s(self) -> dict[str, float]:
        """The endpoint kinds paused by a 429 now, with the seconds left."""
        return {kind: left for kind in list(self._blocked_until)
                if (left := self.blocked_for_s(kind)) > 0}

    def blocked_for_s(self, kind: str) -> float:
        return max(0.0, self._blocked_until.get(kind, 0.0) - time.monotonic())

    def _block(self, kind: str, wait_s: float) -> None:
        now = time.monotonic()
        # Kinds are per game: those whose pause is over go, so a long run keeps no trail.
        self._blocked_until = {k: t for k, t in self._blocked_until.items() if t > now}
        until = now + wait_s
        self._blocked_until[kind] = max(self._blocked_until.get(kind, 0.0), until)

    async def _wait_unblocked(self, kind: str, deadline: float | None = None) -> None:
        """Wait out this endpoint's 429 pause, or raise `RateLimited` at once if the pause
        outlasts the request's deadline (a request never sleeps past it)."""
        while (wait_s := self.blocked_for_s(kind)) > 0:
            if deadline is not None and time.monotonic() + wait_s > deadline:
                raise RateLimited(f"{kind} is rate limited for {wait_s:.0f} s more", "", None,
                                  wait_s)
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
        priority: Priority = Priority.COMMAND,
        optional: bool = False,
    ) -> Any:
        """Send one command, retrying what is worth retrying; the decoded JSON reply (or None).

        `kind` names the endpoint a 429 pauses (e.g. `move:<game>`, `challenge:accept`). An
        `optional` request gives up after `OPTIONAL_RETRIES` retries, and at its first 429
        (the pause still holds back what comes after it); its retries are logged at debug."""
        loop_deadline = time.monotonic() + (
            self.timings.retry_deadline_s if deadline_s is None else deadline_s
        )
        timeout = aiohttp.ClientTimeout(total=self.timings.request_timeout_s)
        attempt = 0
        while True:
            if priority == Priority.CHAT:
                if self.blocked_for_s(kind) > 0 or not self.budget.try_take(priority):
                    raise Dropped(f"{method} {path}: no room in the request budget")
                waited_s = 0.0
            else:
                await self._wait_unblocked(kind, loop_deadline)
                waited_s = await self.budget.take(priority)
            if waited_s >= 1.0:
                log.info("%s %s held %.1f s to keep under the requests-per-minute limit",
                         method, path, waited_s)
            problem: str
            self.tally.request(kind)
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
                reply = classify(status)
                if reply is Reply.OK:
                    try:
                        return json.loads(body) if body.strip() else None
                    except ValueError:
                        return None
                if reply is Reply.AUTH:
                    raise AuthError(status, error_message(body), body)
                if reply is Reply.RATE_LIMITED:
                    key = ratelimit_key(body)
                    floor_s = (self.timings.move_retry_s if priority == Priority.MOVE
                               else self.timings.rate_limit_pause_s)
                    wait_s = rate_limit_wait_s(body, resp_headers, floor_s)
                    self.tally.too_many(kind)
                    if key == BOT_DAY_KEY:  # our day cap on bot games: not the endpoint's
                        raise RateLimited(f"{method} {path}: {error_message(body)}", body, key,
                                          wait_s)
                    self._block(kind, wait_s)
                    if optional:  # the caller logs the line it drops, once
                        raise RateLimited(f"{method} {path}: 429 {error_message(body)}; "
                                          f"{kind} paused for {wait_s:.0f} s", body, key, wait_s)
                    log.warning("429 on %s %s (%s): pausing %s for %.1f s",
                                method, path, error_message(body), kind, wait_s)
                    if time.monotonic() + wait_s > loop_deadline:
                        raise RateLimited(f"{method} {path}: rate limited past its deadline",
                                          body, key, wait_s)
                    continue
                if reply is Reply.REFUSED:
                    raise RequestError(status, error_message(body), path, body)
                problem = f"HTTP {status}: {error_message(body)}"
            delay_s = backoff_delay_s(
                attempt, self.timings.backoff_base_s, self.timings.backoff_cap_s
            )
            if (time.monotonic() + delay_s > loop_deadline
                    or (optional and attempt >= OPTIONAL_RETRIES)):
                raise Unavailable(f"{method} {path}: {problem} (gave up after {attempt + 1} tries)")
            log.log(logging.DEBUG if optional else logging.INFO,
                    "%s %s: %s; retry in %.2f s", method, path, problem, delay_s)
            attempt += 1
            await asyncio.sleep(delay_s)

    # --- ndjson streams ----------------------------------------------------------------------

    async def _limit_opens(self, kind: str) -> None:
        now = time.monotonic()
        for stale in [k for k, times in self._stream_opens.items()
                      if k != kind and (not times or now - times[-1] > STREAM_OPEN_WINDOW_S)]:
            del self._stream_opens[stale]  # a finished game's stream: nothing left to count
        opens = self._stream_opens.setdefault(kind, deque())
        while opens and now - opens[0] > STREAM_OPEN_WINDOW_S:
            opens.popleft()
        if len(opens) >= STREAM_OPENS_PER_WINDOW:
            wait_s = STREAM_OPEN_WINDOW_S - (now - opens[0])
            log.warning("%s reopened %d times in 10 min: waiting %.0f s", kind, len(opens), wait_s)
            await asyncio.sleep(wait_s)

    def _count_open(self, kind: str) -> None:
        """Only a stream the server opened counts: a 5xx or a refused connection never
        reached lila's limiter, and counting those would turn a short outage into a
        10-minute wait on a game whose clock is running."""
        self._stream_opens.setdefault(kind, deque()).append(time.monotonic())

    async def stream_once(self, path: str, *, kind: str) -> AsyncIterator[Any]:
        """One connection to an ndjson stream: decoded lines until it ends or falls silent.

        Keep-alive empty lines are skipped; a line that is not JSON is logged and skipped.
        Raises `AuthError`, `RequestError` (4xx), `Unavailable` (5xx) or a network error.
        """
        await self._wait_unblocked(kind)
        await self._limit_opens(kind)
        await self.budget.take(Priority.MOVE)  # the streams carry the games: as urgent
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.timings.request_timeout_s,
            sock_read=(self.timings.game_stream_silence_s if kind.startswith(GAME_STREAM_KIND)
                       else self.timings.event_stream_silence_s),
        )
        self.tally.request(kind)
        async with self._session.get(self.base_url + path, timeout=timeout) as resp:
            reply = classify(resp.status)
            if reply is not Reply.OK:
                body = await resp.text()
                if reply is Reply.AUTH:
                    raise AuthError(resp.status, error_message(body))
                if reply is Reply.RATE_LIMITED:
                    self.tally.too_many(kind)
                    wait_s = rate_limit_wait_s(
                        body, dict(resp.headers), self.timings.rate_limit_pause_s
                    )
                    self._block(kind, wait_s)
                    raise Unavailable(f"GET {path}: 429 {error_message(body)}")
                if reply is Reply.REFUSED:
                    raise RequestError(resp.status, error_message(body), path)
                raise Unavailable(f"GET {path}: HTTP {resp.status}: {error_message(body)}")
            self._count_open(kind)
            self.open_streams.add(kind)
            try:
                async for raw_line in resp.content:
                    line = raw_line.strip()
                    if not line:
                        continue  # keep-alive
                    try:
                        yield json.loads(line)
                    except ValueError:
                        log.warning("%s: skipped a line that is not JSON: %.100r", path, line)
            finally:
                self.open_streams.discard(kind)

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
        return self.follow("/api/stream/event", kind=EVENT_STREAM_KIND)

    def follow_game(self, game_id: str) -> AsyncIterator[Any]:
        return self.follow(f"/api/bot/game/stream/{quote(game_id)}",
                           kind=f"{GAME_STREAM_KIND}{game_id}")

    # --- account ------------------------------------------------------------------------------

    async def account(self) -> dict[str, Any]:
        """`GET /api/account`, as sent (read by bot.lichess.account and the opponents' book)."""
        data = await self.request("GET", "/api/account", kind="account")
        if not isinstance(data, dict):
            raise LichessError("/api/account did not return an object")
        return data

    async def token_test(self) -> dict[str, Any] | None:
        """`POST /api/token/test` for our token, as sent (read by bot.lichess.account);
        None if the server lacks that endpoint."""
        try:
            data = await self.request("POST", "/api/token/test", kind="token", data=self._token)
        except RequestError as exc:
            if exc.status == 404:
                return None
            raise
        if not isinstance(data, dict):
            raise LichessError("/api/token/test did not return an object")
        return data

    # --- challenges ---------------------------------------------------------------------------

    async def accept_challenge(self, challenge_id: str) -> None:
        await self.request(
            "POST", f"/api/challenge/{quote(challenge_id)}/accept", kind="challenge:accept",
            deadline_s=COMMAND_DEADLINE_S,
        )

    async def users_status(self, user_ids: list[str],
                           deadline_s: float = COMMAND_DEADLINE_S) -> list[Mapping[str, Any]]:
        """`GET /api/users/status` (public: no scope): an entry per known user, with `id`,
        `title` (absent without one), and `online` only when true."""
        ids = ",".join(quote(i) for i in user_ids)
        data = await self.request("GET", f"/api/users/status?ids={ids}", kind="users:status",
                                  deadline_s=deadline_s)
        if not isinstance(data, list):
            raise LichessError("/api/users/status did not return a list")
        return [u for u in data if isinstance(u, Mapping)]

    async def online_users(self, user_ids: list[str]) -> set[str]:
        """Which of these users are online."""
        return {str(u.get("id")) for u in await self.users_status(user_ids)
                if u.get("online") is True}

    async def decline_challenge(self, challenge_id: str, reason: str) -> None:
        await self.request(
            "POST", f"/api/challenge/{quote(challenge_id)}/decline", kind="challenge:decline",
            data={"reason": reason}, deadline_s=COMMAND_DEADLINE_S,
        )

    async def create_challenge(self, username: str, form: Mapping[str, str], *,
                               kind: str, deadline_s: float) -> str:
        """Challenge `username` (`form`: the challenge's fields); the challenge id."""
        reply = await self.request("POST", f"/api/challenge/{quote(username)}", kind=kind,
                                   data=form, deadline_s=deadline_s)
        challenge_id = reply.get("id") if isinstance(reply, Mapping) else None
        if not isinstance(challenge_id, str):
            raise LichessError(f"the challenge reply has no id: {reply!r:.200}")
        return challenge_id

    async def cancel_challenge(self, challenge_id: str) -> None:
        await self.request("POST", f"/api/challenge/{quote(challenge_id)}/cancel",
                           kind="challenge:cancel", deadline_s=COMMAND_DEADLINE_S)

    async def online_bots(self, count: int) -> list[dict[str, Any]]:
        """Up to `count` bots online now (User objects with an `id`), read from one stream."""
        bots = []
        async for item in self.stream_once(f"/api/bot/online?nb={count}", kind="bot online"):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                bots.append(item)
        return bots

    async def playing(self, count: int) -> Any:
        """Our games in progress (`GET /api/account/playing`, at most `count`), as sent."""
        return await self.request("GET", "/api/account/playing", kind="playing",
                                  params={"nb": str(count)}, deadline_s=LIST_DEADLINE_S)

    # --- game commands ------------------------------------------------------------------------

    def _game_path(self, game_id: str, tail: str) -> str:
        return f"/api/bot/game/{quote(game_id)}/{tail}"

    async def move(
        self, game_id: str, uci: str, *, offering_draw: bool = False,
        deadline_s: float | None = None,
    ) -> None:
        params = {"offeringDraw": "true"} if offering_draw else None
        await self.request(
            "POST", self._game_path(game_id, f"move/{quote(uci)}"), kind=f"move:{game_id}",
            params=params, deadline_s=deadline_s, priority=Priority.MOVE,
        )

    async def chat(self, game_id: str, room: str, text: str, *, droppable: bool = False) -> bool:
        """Send a chat line; False if it was not sent now. A `droppable` line (the PV after a
        move) is sent at once only if the request budget has room for it; else it is held,
        replaced by a newer line of the same room, and sent when there is room. Any other
        line waits its turn behind the moves, like a command. A line is never retried in a
        loop (`optional`): a failure raises `RequestError` or `Unavailable` for the caller to
        drop the line."""
        try:
            await self.request(
                "POST", self._game_path(game_id, "chat"), kind=CHAT_KIND,
                data={"room": room, "text": text}, deadline_s=COMMAND_DEADLINE_S,
                priority=Priority.CHAT if droppable else Priority.COMMAND, optional=True,
            )
        except Dropped:
            # Kept as the newest line for this room, sent once the budget has room; a newer
            # line replaces it (merged), so a PV never waits behind an older one.
            key = (game_id, room)
            if key in self._pending_chat:
                self.budget.dropped_chat += 1
            else:
                task = asyncio.get_running_loop().create_task(self._flush_chat(key))
                self._chat_flushers.add(task)
                task.add_done_callback(self._chat_flushers.discard)
            self._pending_chat[key] = text
            log.debug("game %s: chat line held, the request budget is tight", game_id)
            return False
        return True

    def forget_held_chat(self, game_id: str) -> None:
        """Drop the PV lines held for a game (its PV was switched off, or it ended)."""
        for key in [k for k in self._pending_chat if k[0] == game_id]:
            del self._pending_chat[key]

    async def _flush_chat(self, key: tuple[str, str]) -> None:
        """Send the newest held PV line of one room once the budget has room for it."""
        game_id, room = key
        while key in self._pending_chat:
            await self.budget.wait_room(Priority.CHAT)
            # gone while it waited: forgotten (the game ended) or sent by another flusher
            text = self._pending_chat.pop(key, None)
            if text is None:
                return
            try:
                await self.request(
                    "POST", self._game_path(game_id, "chat"), kind=CHAT_KIND,
                    data={"room": room, "text": text}, deadline_s=COMMAND_DEADLINE_S,
                    priority=Priority.CHAT, optional=True)
            except Dropped:
                self._pending_chat.setdefault(key, text)
                # a 429's pause: the line waits it out, once, not polling
                await asyncio.sleep(max(self.blocked_for_s(CHAT_KIND),
                                        1.0 / self.budget.rate_per_s))
            except LichessError as exc:
                log.info("game %s: held chat line not sent: %s", game_id, exc)

    async def abort(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "abort"), kind=f"game:{game_id}",
                           deadline_s=COMMAND_DEADLINE_S)

    async def resign(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "resign"), kind=f"game:{game_id}",
                           deadline_s=COMMAND_DEADLINE_S)

    async def answer_draw(self, game_id: str, accept: bool) -> None:
        await self.request(
            "POST", self._game_path(game_id, "draw/" + ("yes" if accept else "no")),
            kind=f"game:{game_id}", deadline_s=COMMAND_DEADLINE_S,
        )

    async def answer_takeback(self, game_id: str, accept: bool) -> None:
        await self.request(
            "POST", self._game_path(game_id, "takeback/" + ("yes" if accept else "no")),
            kind=f"game:{game_id}", deadline_s=COMMAND_DEADLINE_S,
        )

    async def claim_victory(self, game_id: str) -> None:
        await self.request("POST", self._game_path(game_id, "claim-victory"),
                           kind=f"game:{game_id}", deadline_s=COMMAND_DEADLINE_S)
