"""Online move sources: the Lichess opening explorer, cloud evaluation and tablebase.

Each source is asked with its own timeout. A source that fails to answer
(nothing known, bad data, an error, a timeout) counts a miss; after
``max_misses`` misses in a row it is not asked again in that game, so a bot
that has left the explorer's book stops paying for round trips. Every answer
reports the wall time it took, so the caller can take it off the clock it
gives the engine.

Where the sources live follows the configured server: lichess.org uses the
public explorer and tablebase hosts; any other server (a self-hosted lila,
the sandbox) is asked for all three under its own base URL.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
import chess
import chess.engine

from bot.ops.config import OnlineConfig, OnlineSourceConfig

log = logging.getLogger(__name__)

LICHESS_HOSTS = frozenset({"lichess.org", "www.lichess.org"})
PUBLIC_EXPLORER_URL = "https://explorer.lichess.org"
PUBLIC_TABLEBASE_URL = "https://tablebase.lichess.org"

# An explorer move needs this many games behind it to be trusted as "book".
EXPLORER_MIN_GAMES = 5
# Explorer query: rated games of these speeds and rating groups (strong players).
EXPLORER_SPEEDS = "blitz,rapid,classical"
EXPLORER_RATINGS = "2000,2200,2500"

# Tablebase categories (for the side to move) as Syzygy WDL values. "maybe"
# results are wins/losses whose fifty-move outcome is unknown: counted as such.
CATEGORY_WDL: Mapping[str, int] = {
    "win": 2,
    "syzygy-win": 2,
    "maybe-win": 2,
    "cursed-win": 1,
    "draw": 0,
    "blessed-loss": -1,
    "maybe-loss": -2,
    "syzygy-loss": -2,
    "loss": -2,
}


class OnlineSourceKind(enum.StrEnum):
    EXPLORER = "explorer"
    CLOUD_EVAL = "cloud_eval"
    ONLINE_TABLEBASE = "online_tablebase"


@dataclass(frozen=True, slots=True)
class OnlineEndpoints:
    """Base URLs of the three services (no trailing slash)."""

    explorer_url: str
    cloud_eval_url: str
    tablebase_url: str


def endpoints_for(server_url: str) -> OnlineEndpoints:
    """The service URLs that go with the configured Lichess server URL."""
    base = server_url.rstrip("/")
    if (urlsplit(base).hostname or "") in LICHESS_HOSTS:
        return OnlineEndpoints(PUBLIC_EXPLORER_URL, base, PUBLIC_TABLEBASE_URL)
    return OnlineEndpoints(base, base, base)


@dataclass(frozen=True, slots=True)
class OnlineMove:
    """A move an online source chose, with what it knows about the position."""

    move: chess.Move
    source: OnlineSourceKind
    score: chess.engine.PovScore | None = None  # cloud eval
    depth: int | None = None  # cloud eval
    pv: tuple[chess.Move, ...] = ()  # cloud eval (starts with ``move``)
    wdl: int | None = None  # online tablebase, for the side to move
    keeping_moves: tuple[chess.Move, ...] = ()  # online tablebase: moves keeping ``wdl``
    games: int | None = None  # explorer: games played with this move


@dataclass(frozen=True, slots=True)
class OnlineAnswer:
    """What asking the sources gave: a move or None, and the wall time it cost."""

    move: OnlineMove | None
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """One source's limits (mirrors the online.* config sections)."""

    enabled: bool = False
    timeout_s: float = 2.0
    max_misses: int = 3  # misses in a row before giving up for the game; 0 = never give up
    min_depth: int = 20  # cloud eval: shallower evaluations are a miss
    max_pieces: int = 7  # online tablebase: only positions with at most this many pieces


_Asker = Callable[["_Request", chess.Board, str], Awaitable[OnlineMove]]


class _Miss(Exception):
    """The source had no usable answer; the message says why (for the debug log)."""


@dataclass
class _Source:
    kind: OnlineSourceKind
    url: str
    settings: SourceSettings
    misses: int = 0
    given_up: bool = field(default=False)

    @property
    def active(self) -> bool:
        return self.settings.enabled and not self.given_up

    def record(self, hit: bool, *, give_up: bool = False) -> None:
        if hit:
            self.misses = 0
            return
        self.misses += 1
        limit = self.settings.max_misses
        if give_up or (limit > 0 and self.misses >= limit):
            self.given_up = True


@dataclass(frozen=True, slots=True)
class _Request:
    """One question to one source, with the timeout it gets."""

    source: _Source
    timeout_s: float


class OnlineSources:
    """The online sources for one game, asked in order: tablebase, explorer, cloud eval.

    ``session`` is the bot's shared aiohttp session; ``headers`` (the account's
    token, which the explorer wants) go to the explorer and cloud eval, never to
    the tablebase host.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        endpoints: OnlineEndpoints,
        *,
        explorer: SourceSettings,
        cloud_eval: SourceSettings,
        online_tablebase: SourceSettings,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._session = session
        self._headers = dict(headers or {})
        self.tablebase = _Source(OnlineSourceKind.ONLINE_TABLEBASE, endpoints.tablebase_url,
                                 online_tablebase)
        self.explorer = _Source(OnlineSourceKind.EXPLORER, endpoints.explorer_url, explorer)
        self.cloud_eval = _Source(OnlineSourceKind.CLOUD_EVAL, endpoints.cloud_eval_url,
                                  cloud_eval)

    @property
    def any_active(self) -> bool:
        return any(s.active for s in (self.tablebase, self.explorer, self.cloud_eval))

    async def probe(self, board: chess.Board, variant: str = "standard", *,
                    budget_s: float | None = None) -> OnlineAnswer:
        """Ask the active sources in turn until one gives a legal move.

        With ``budget_s``, no request outlives it: each gets the smaller of its own
        timeout and what is left of the budget (running out counts as a miss).
        """
        started = time.monotonic()
        for source, ask in (
            (self.tablebase, self._ask_tablebase),
            (self.explorer, self._ask_explorer),
            (self.cloud_eval, self._ask_cloud_eval),
        ):
            if not source.active:
                continue
            if source is self.tablebase and (variant not in TABLEBASE_PATHS
                                             or not _tablebase_covers(board, source.settings)):
                continue
            timeout_s = source.settings.timeout_s
            if budget_s is not None:
                timeout_s = min(timeout_s, budget_s - (time.monotonic() - started))
                if timeout_s <= 0:
                    break
            found = await self._ask(source, ask, board, variant, timeout_s)
            if found is not None:
                return OnlineAnswer(found, time.monotonic() - started)
        return OnlineAnswer(None, time.monotonic() - started)

    async def _ask(self, source: _Source, ask: _Asker, board: chess.Board, variant: str,
                   timeout_s: float) -> OnlineMove | None:
        try:
            found = await ask(_Request(source, timeout_s), board, variant)
        except _Miss as miss:
            log.debug("%s: no move (%s)", source.kind, miss)
            source.record(False)
            return None
        except _RateLimited:
            log.warning("%s: rate limited, not asked again this game", source.kind)
            source.record(False, give_up=True)
            return None
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            log.info("%s: request failed (%s)", source.kind, type(exc).__name__)
            source.record(False)
            return None
        source.record(True)
        return found

    async def _get_json(self, request: _Request, path: str,
                        params: Mapping[str, str]) -> Mapping[str, Any]:
        timeout = aiohttp.ClientTimeout(total=request.timeout_s)
        headers = {} if request.source is self.tablebase else self._headers
        async with self._session.get(f"{request.source.url}{path}", params=params, timeout=timeout,
                                     headers=headers) as response:
            if response.status == 429:
                raise _RateLimited
            if response.status == 404:
                raise _Miss("not found")
            if response.status != 200:
                raise _Miss(f"HTTP {response.status}")
            try:
                data = await response.json(content_type=None)
            except ValueError as exc:
                raise _Miss("the reply is not JSON") from exc
        if not isinstance(data, dict):
            raise _Miss("the reply is not a JSON object")
        return data

    async def _ask_explorer(self, request: _Request, board: chess.Board,
                            variant: str) -> OnlineMove:
        params = {"variant": _api_variant(variant), "fen": board.fen(),
                  "speeds": EXPLORER_SPEEDS, "ratings": EXPLORER_RATINGS,
                  "topGames": "0", "recentGames": "0"}
        data = await self._get_json(request, "/lichess", params)
        best: tuple[int, chess.Move] | None = None
        for entry in _list(data, "moves"):
            games = sum(_int(entry, key) for key in ("white", "draws", "black"))
            move = _legal(board, entry.get("uci"))
            if move is not None and games >= EXPLORER_MIN_GAMES and (best is None
                                                                      or games > best[0]):
                best = (games, move)
        if best is None:
            raise _Miss("no move with enough games")
        return OnlineMove(best[1], OnlineSourceKind.EXPLORER, games=best[0])

    async def _ask_cloud_eval(self, request: _Request, board: chess.Board,
                              variant: str) -> OnlineMove:
        params = {"fen": board.fen(), "multiPv": "1", "variant": _api_variant(variant)}
        data = await self._get_json(request, "/api/cloud-eval", params)
        depth = _int(data, "depth")
        min_depth = request.source.settings.min_depth
        if depth < min_depth:
            raise _Miss(f"depth {depth} is below {min_depth}")
        pvs = _list(data, "pvs")
        if not pvs:
            raise _Miss("no variation")
        first = pvs[0]
        moves = first.get("moves")
        if not isinstance(moves, str):
            raise _Miss("variation without moves")
        pv = _legal_line(board, moves.split())
        if not pv:
            raise _Miss("the variation's first move is illegal")
        if isinstance(first.get("mate"), int):
            white: chess.engine.Score = chess.engine.Mate(first["mate"])
        elif isinstance(first.get("cp"), int):
            white = chess.engine.Cp(first["cp"])
        else:
            raise _Miss("variation without a score")
        score = chess.engine.PovScore(white, chess.WHITE)
        return OnlineMove(pv[0], OnlineSourceKind.CLOUD_EVAL, score=score, depth=depth, pv=pv)

    async def _ask_tablebase(self, request: _Request, board: chess.Board,
                             variant: str) -> OnlineMove:
        data = await self._get_json(request, TABLEBASE_PATHS[variant], {"fen": board.fen()})
        wdl = CATEGORY_WDL.get(str(data.get("category")))
        if wdl is None:
            raise _Miss(f"category {data.get('category')!r}")
        entries = _list(data, "moves")
        if not entries:
            raise _Miss("no moves")
        best_category = entries[0].get("category")
        best = _legal(board, entries[0].get("uci"))
        if best is None:
            raise _Miss("the best move is illegal")
        keeping = tuple(
            move
            for entry in entries
            if entry.get("category") == best_category
            and (move := _legal(board, entry.get("uci"))) is not None
        )
        return OnlineMove(best, OnlineSourceKind.ONLINE_TABLEBASE, wdl=wdl,
                          keeping_moves=keeping)


class _RateLimited(Exception):
    """HTTP 429: the service wants us to stop asking for a while."""


def _tablebase_covers(board: chess.Board, settings: SourceSettings) -> bool:
    return (chess.popcount(board.occupied) <= settings.max_pieces
            and not board.castling_rights and not board.is_game_over())


# The tablebase server's path for each variant it has tables of (tablebase.lichess.ovh:
# /standard, /atomic, /antichess); other variants are not asked.
TABLEBASE_PATHS: Final[Mapping[str, str]] = {
    "standard": "/standard", "chess960": "/standard", "fromPosition": "/standard",
    "atomic": "/atomic", "antichess": "/antichess",
}


def _api_variant(variant: str) -> str:
    """The explorer's and cloud evaluation's `variant` parameter: lila's variant keys
    (VariantKey in the API spec), a set-up position being standard chess."""
    return "standard" if variant == "fromPosition" else variant


def _list(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data.get(key)
    if not isinstance(value, list):
        raise _Miss(f"field {key!r} is not a list")
    return [item for item in value if isinstance(item, dict)]


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Miss(f"field {key!r} is not an integer")
    return value


def _legal(board: chess.Board, uci: object) -> chess.Move | None:
    if not isinstance(uci, str):
        return None
    try:
        return board.parse_uci(uci)
    except ValueError:  # malformed or illegal here
        return None


def _legal_line(board: chess.Board, ucis: list[str]) -> tuple[chess.Move, ...]:
    """The legal prefix of a line of UCI moves from ``board``."""
    line: list[chess.Move] = []
    position = board.copy(stack=False)
    for uci in ucis:
        move = _legal(position, uci)
        if move is None:
            break
        line.append(move)
        position.push(move)
    return tuple(line)


def sources_from_config(
    session: aiohttp.ClientSession,
    config: OnlineConfig,
    server_url: str,
    headers: Mapping[str, str] | None = None,
) -> OnlineSources:
    """The online sources of one game, as the ``online`` config section describes them."""

    def settings(section: OnlineSourceConfig) -> SourceSettings:
        return SourceSettings(enabled=section.enabled, timeout_s=section.timeout_s,
                              max_misses=section.max_misses)

    cloud = config.cloud_eval
    tablebase = config.online_tablebase
    return OnlineSources(
        session,
        endpoints_for(server_url),
        explorer=settings(config.explorer),
        cloud_eval=dataclasses.replace(settings(cloud), min_depth=cloud.min_depth),
        online_tablebase=dataclasses.replace(settings(tablebase),
                                             max_pieces=tablebase.max_pieces),
        headers=headers,
    )

