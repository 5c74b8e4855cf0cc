"""SandboxServer: a local Lichess-compatible server, in-process for tests or standalone.

    server = SandboxServer(keepalive_s=0.5)
    url = await server.start()                 # "http://127.0.0.1:<port>"
    token = server.add_account("kibitz", bot=True)
    await server.start_opponent("sparring", challenge=ChallengeSpec("kibitz", 60, 1))
    ...
    record = await server.wait_for_game_end(game_id, timeout_s=30)
    await server.stop()

SandboxServer, by task:
    lifecycle   start(host, port) -> url, stop(), `async with SandboxServer(...)`, url
    accounts    add_account(username, bot=, scopes=, token=) -> token, account(username)
    play        challenge(from, to, limit_s, increment_s, days=, variant=, fen=, rated=,
                color=) -> challenge id; pair(white, black, ...) -> game id (a lobby-style
                game, no challenge); offer_rematch(game_id, from_user); start_opponent(
                username, bot=, engine=argv, challenge=ChallengeSpec(...), movetime_s=, ...)
    results     game(id) (live), game_record(id) / game_records() (snapshots: moves,
                status, winner, chat, fen, pgn), wait_for_game(username),
                wait_for_game_end(id), end_game(id, status, winner), summary() (games
                finished, rated, left unrated by lila's botFarming)
    faults      fail(status, path_glob, method=, username=, count=), delay(seconds, ...),
                rate_limit(path_glob, html=, ...) act on matching requests, `count` times
                (None: until clear_faults()); drop_streams(kind, username) cuts the open
                streams abruptly and silence_streams(kind, username, keep_events=) leaves
                them open but mute (kind: "event", "game" or "challenge"), open_streams(
                kind, username) counts them; add_fault(
                parse_fault("...")) takes the command-line form (see faults.py).
    online      online (OnlineFixtures): the answers of the stand-in opening explorer
                (/lichess), cloud eval (/api/cloud-eval) and tablebase (/standard).
Settings (constructor): keepalive_s (event stream), game_keepalive_s, challenge_expiry_s,
gone_after_s, gone_tick_s,
claim_win_after_s (None: lila's delay by speed),
first_move (FirstMoveTimers), limits (RateLimits), legacy_castling, quirks (Quirks), clock
(timers.SandboxClock: real time by default; a timers.ManualClock lets a test move time itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import chess
from aiohttp import web

from sandbox.accounts import DEFAULT_HUMAN_SCOPES, TOURNAMENT_WRITE, Account
from sandbox.challenges import CHESS960_POSITIONS, ChallengeRequest
from sandbox.errors import ApiError
from sandbox.faults import FaultPlan, RequestFault, StreamFault, parse_fault
from sandbox.games import (
    PLAYING,
    STATUS_IDS,
    ChatLine,
    FirstMoveTimers,
    Game,
    GameSettings,
    color_name,
)
from sandbox.lobby import QUIRK_NAMES, Lobby, LobbySettings, Quirks
from sandbox.online import OnlineFixtures, register_online_routes
from sandbox.opponent import ChallengeSpec, Opponent, OpponentSettings
from sandbox.pgn import ExportOptions, export
from sandbox.ratelimit import RateLimits
from sandbox.routes import Api
from sandbox.timers import LoopClock, SandboxClock
from sandbox.tournament_routes import TournamentApi
from sandbox.tournaments import Arena, Arenas, ArenaSpec, parse_arena

log = logging.getLogger(__name__)

DEFAULT_BOT = "kibitz"
DEFAULT_HUMAN = "sparring"
# People of these ratings, on request (`--humans`): accounts `human<rating>`.
DEFAULT_HUMAN_RATINGS = (1200, 1600, 2000)
HUMAN_PREFIX = "human"
# The sparring engine for rated people when no `--engine` is given: the project's own.
BUILTIN_ENGINE = (sys.executable, "-m", "engine")
# The sparring account may join arenas (lila's apiJoin wants tournament:write).
HUMAN_ARENA_SCOPES = (*DEFAULT_HUMAN_SCOPES, TOURNAMENT_WRITE)
# Open streams are cut after this long when the server stops.
SHUTDOWN_TIMEOUT_S = 0.5
GAME_KEEPALIVE_RATIO = 7.0 / 6.0  # lila: a game stream's keep-alive to the event stream's


@dataclass(frozen=True)
class GameRecord:
    """A read-only snapshot of a game, for tests to check outcomes."""

    id: str
    white: str
    black: str
    variant: str
    initial_fen: str | None
    moves: tuple[str, ...]
    status: str
    winner: str | None
    chat: tuple[ChatLine, ...]
    fen: str
    rated: bool
    export: Callable[[], str] = field(repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.status not in ("created", "started")

    @cached_property
    def pgn(self) -> str:
        """The PGN export (with %clk comments), made when first read."""
        return self.export()


class SandboxServer:
    """The sandbox: accounts, challenges, games, streams, limits and faults over HTTP."""

    def __init__(
        self,
        keepalive_s: float = 6.0,
        *,
        game_keepalive_s: float | None = None,
        challenge_expiry_s: float = 20.0,
        gone_after_s: float = 5.0,
        gone_tick_s: float = 5.0,
        claim_win_after_s: float | None = None,
        first_move: FirstMoveTimers | None = None,
        limits: RateLimits | None = None,
        legacy_castling: bool = False,
        quirks: Quirks | None = None,
        clock: SandboxClock | None = None,
    ) -> None:
        settings = LobbySettings(
            keepalive_s=keepalive_s,
            # lila's 7 s to 6 s unless given: a test's short keep-alive scales both.
            game_keepalive_s=(keepalive_s * GAME_KEEPALIVE_RATIO if game_keepalive_s is None
                              else game_keepalive_s),
            challenge_expiry_s=challenge_expiry_s,
            gone_after_s=gone_after_s,
            gone_tick_s=gone_tick_s,
            game=GameSettings(first_move=first_move or FirstMoveTimers(),
                              claim_win_after_s=claim_win_after_s,
                              legacy_castling=legacy_castling,
                              clock=clock or LoopClock()),
            limits=limits or RateLimits(),
            quirks=quirks or Quirks(),
        )
        self._url = ""
        self.lobby = Lobby(settings, lambda: self._url)
        self.faults = FaultPlan()
        self.arenas = Arenas(self.lobby)
        self._runner: web.AppRunner | None = None
        self.opponents: list[Opponent] = []
        self._fault_tasks: list[asyncio.Task[None]] = []
        # Stand-ins for the opening explorer, cloud eval and online tablebase; tests fill them.
        self.online = OnlineFixtures()

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if not self._url:
            raise RuntimeError("the sandbox is not started")
        return self._url

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host:port (0 picks a free port) and return the base URL."""
        api = Api(self.lobby, self.faults)
        app = web.Application(middlewares=[api.middleware])
        app.add_routes(api.routes())
        app.add_routes(TournamentApi(api, self.arenas).routes())
        register_online_routes(app, self.online)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                                     shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = int(self._runner.addresses[0][1])
        shown_host = f"[{host}]" if ":" in host else host
        self._url = f"http://{shown_host}:{bound_port}"
        return self._url

    async def stop(self) -> None:
        for task in self._fault_tasks:
            task.cancel()
        for opponent in self.opponents:
            await opponent.stop()
        self.opponents.clear()
        self.arenas.shutdown()
        self.lobby.shutdown()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SandboxServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # --- accounts --------------------------------------------------------------------------

    def add_account(self, username: str, *, bot: bool, scopes: Iterable[str] | None = None,
                    token: str | None = None) -> str:
        """Create an account and return its bearer token."""
        return self.lobby.accounts.add(username, bot=bot, scopes=scopes, token=token).token

    def add_anonymous(self, handle: str) -> str:
        """A player who is not logged in (challenges show `"challenger": null`); `handle`
        names it in the sandbox only. Its token lets a test play its side."""
        account = self.lobby.accounts.add(handle, bot=False)
        account.anonymous = True
        return account.token

    def account(self, username: str) -> Account:
        account = self.lobby.accounts.by_name(username)
        if account is None:
            raise KeyError(f"no account {username!r}")
        return account

    # --- challenges, games and the opponent ------------------------------------------------

    async def challenge(
        self, from_user: str, to_user: str, clock_limit_s: int | None = 180,
        increment_s: int | None = 2, *, days: int | None = None, variant: str = "standard",
        fen: str | None = None, rated: bool = False, color: str = "random",
    ) -> str:
        """Send a challenge from one account to another, as if over the API; return its id."""
        form = ChallengeSpec(to_user, clock_limit_s, increment_s, days, variant, fen, rated,
                             color).form()
        request = ChallengeRequest.parse(form)
        challenge = self.lobby.create_challenge(self.account(from_user), to_user, request)
        return challenge.id

    async def offer_rematch(self, game_id: str, from_user: str) -> str:
        """`from_user` offers a rematch of a finished game; the challenge id (= game id)."""
        return self.lobby.offer_rematch(self.game(game_id), self.account(from_user)).id

    async def pair(
        self, white: str, black: str, clock_limit_s: int | None = 180,
        increment_s: int | None = 2, *, days: int | None = None, variant: str = "standard",
        fen: str | None = None, rated: bool = False, source: str = "lobby",
    ) -> str:
        """Start a game at once, as a lobby pairing would (no challenge); return its id."""
        form = ChallengeSpec(black, clock_limit_s, increment_s, days, variant, fen, rated,
                             "white").form()
        request = ChallengeRequest.parse(form)
        fen = request.fen
        if request.variant == "chess960" and fen is None:
            fen = chess.Board.from_chess960_pos(random.randrange(CHESS960_POSITIONS)).fen()
        game = self.lobby.start_game(self.account(white), self.account(black),
                                     request.time_control, request.variant, fen,
                                     request.rated, source=source)
        return game.id

    async def start_opponent(
        self, username: str, *, bot: bool = False, engine: Sequence[str] | None = None,
        challenge: ChallengeSpec | None = None, movetime_s: float | None = 0.05,
        accept: bool = True, seed: int | None = None, greeting: str | None = None,
        accept_draws: bool = False, accept_takebacks: bool = False,
        rating: int | None = None, drops_first: bool = False,
    ) -> Opponent:
        """Run a sandbox-side player on `username` (created if missing).

        It accepts incoming challenges (if `accept`), challenges `challenge.target` (again
        after every game if `challenge.repeat`), and plays random moves or the moves of the
        UCI engine `engine` (an argv list). With `rating`, the account has that rating in
        every perf and the engine plays at that strength (sandbox/strength.py). With
        `drops_first`, a crazyhouse piece in hand is dropped at once (OpponentSettings).
        """
        existing = self.lobby.accounts.by_name(username)
        if existing is None:
            existing = self.lobby.accounts.add(username, bot=bot, rating=rating)
        elif rating is not None:
            existing.set_rating(rating)
        opponent = Opponent(self.url, existing.token, existing.username, existing.bot,
                            OpponentSettings(engine=engine, movetime_s=movetime_s,
                                             accept=accept, challenge=challenge, seed=seed,
                                             greeting=greeting, accept_draws=accept_draws,
                                             accept_takebacks=accept_takebacks, elo=rating,
                                             drops_first=drops_first))
        await opponent.start()
        self.opponents.append(opponent)
        return opponent

    def game(self, game_id: str) -> Game:
        game = self.lobby.games.get(game_id)
        if game is None:
            raise KeyError(f"no game {game_id!r}")
        return game

    def game_record(self, game_id: str) -> GameRecord:
        game = self.game(game_id)
        return GameRecord(
            id=game.id, white=game.players[chess.WHITE].username,
            black=game.players[chess.BLACK].username, variant=game.variant,
            initial_fen=game.initial_fen, moves=tuple(game.uci_moves), status=game.status,
            winner=None if game.winner is None else color_name(game.winner),
            chat=tuple(game.chat), fen=game.board.fen(), rated=game.rated,
            export=lambda: export(game, self._url, ExportOptions(clocks=True)))

    def summary(self) -> str:
        """One line on the games played: how many finished, were rated, and were left
        unrated by lila's botFarming rule (sandbox/farming.py)."""
        finished = [g for g in self.lobby.games.values() if not g.playing]
        rated = sum(1 for g in finished if g.rating_diffs)
        unrated = len(self.lobby.unrated_games)
        return (f"games: {len(finished)} finished, {rated} rated, {unrated} left unrated "
                "(lila botFarming: the first 20 plies and the winner of one of the pair's "
                "last 2 games)")

    def game_records(self) -> list[GameRecord]:
        return [self.game_record(game_id) for game_id in self.lobby.games]

    async def wait_for_game_end(self, game_id: str, timeout_s: float = 60.0) -> GameRecord:
        game = self.game(game_id)
        if game.playing:
            future: asyncio.Future[Game] = asyncio.get_running_loop().create_future()
            self.lobby.finished_waiters.append((game_id, future))
            await asyncio.wait_for(future, timeout_s)
        return self.game_record(game_id)

    async def wait_for_game(self, username: str, timeout_s: float = 60.0) -> str:
        """Wait until `username` has a game in progress (woken by the game's start, no
        polling); return its id. `timeout_s` only bounds a hang."""
        account = self.account(username)
        ongoing = self.lobby.ongoing(account)
        if ongoing:
            return ongoing[0][0].id
        future: asyncio.Future[Game] = asyncio.get_running_loop().create_future()
        self.lobby.started_waiters.append((account.id, future))
        try:
            return (await asyncio.wait_for(future, timeout_s)).id
        except TimeoutError:
            raise TimeoutError(f"no game of {username} started in {timeout_s:g} s") from None

    def end_game(self, game_id: str, status: str = "aborted", winner: str | None = None) -> None:
        """End a game from the server side (e.g. `cheat`, `unknownFinish`)."""
        if status not in STATUS_IDS or status in PLAYING:
            raise ValueError(f"status {status!r}: use one of "
                             f"{', '.join(s for s in STATUS_IDS if s not in PLAYING)}")
        if winner not in (None, "white", "black"):
            raise ValueError(f"winner {winner!r}: use 'white', 'black' or None")
        color = None if winner is None else winner == "white"
        self.game(game_id).finish_by_server(status, color)

    # --- arenas ----------------------------------------------------------------------------

    def create_arena(self, spec: ArenaSpec | None = None, created_by: str = "lichess") -> str:
        """Create an arena (it starts after `spec.starts_in_s` on the sandbox's clock and
        ends `spec.minutes` later); return its id."""
        return self.arenas.create(spec or ArenaSpec(), created_by).id

    def arena(self, arena_id: str) -> Arena:
        return self.arenas.find(arena_id)

    def add_team_member(self, team: str, username: str) -> None:
        self.arenas.team_members.setdefault(team, set()).add(self.account(username).id)

    # --- faults ----------------------------------------------------------------------------

    def fail(self, status: int = 500, path: str = "*", *, method: str | None = None,
             username: str | None = None, count: int | None = 1,
             for_s: float | None = None) -> RequestFault:
        """Answer matching requests with HTTP `status` (count times; None = until cleared),
        or, with `for_s`, every one for that long on the server's clock (an outage)."""
        until_s = None if for_s is None else self.lobby.settings.game.clock.now() + for_s
        return self.faults.add(RequestFault("status", path, method, username,
                                            None if for_s is not None else count,
                                            status=status, until_s=until_s))

    def delay(self, seconds: float, path: str = "*", *, method: str | None = None,
              username: str | None = None, count: int | None = None) -> RequestFault:
        """Hold matching requests for `seconds` before handling them."""
        return self.faults.add(RequestFault("delay", path, method, username, count,
                                            delay_s=seconds))

    def rate_limit(self, path: str = "*", *, html: bool = False, method: str | None = None,
                   username: str | None = None, count: int | None = 1) -> RequestFault:
        """Answer matching requests with 429, as JSON or as an HTML page."""
        return self.faults.add(RequestFault("ratelimit", path, method, username, count,
                                            html=html))

    def reset(self, path: str = "*", *, method: str | None = None,
              username: str | None = None, count: int | None = 1) -> RequestFault:
        """Drop the connection of matching requests with no answer."""
        return self.faults.add(RequestFault("reset", path, method, username, count))

    def clear_faults(self) -> None:
        self.faults.clear()

    def drop_streams(self, kind: str | None = None, username: str | None = None) -> int:
        """Cut the open streams (kind: event, game, challenge) abruptly; return how many."""
        chosen = self.lobby.hub.select(kind, username.lower() if username else None)
        for stream in chosen:
            stream.drop()
        return len(chosen)

    def open_streams(self, kind: str | None = None, username: str | None = None) -> int:
        """How many streams (kind: event, game, challenge) are open now."""
        return len(self.lobby.hub.select(kind, username.lower() if username else None))

    def silence_streams(self, kind: str | None = None, username: str | None = None,
                        keep_events: bool = False) -> int:
        """Let the open streams go silent: no keep-alives (and no events unless keep_events)."""
        chosen = self.lobby.hub.select(kind, username.lower() if username else None)
        for stream in chosen:
            stream.silence(keep_events)
        return len(chosen)

    def add_fault(self, fault: RequestFault | StreamFault) -> None:
        """Install a parsed `--fault`: request faults at once, stream faults periodically."""
        if isinstance(fault, RequestFault):
            self.faults.add(fault)
            return
        self._fault_tasks.append(asyncio.create_task(self._repeat_stream_fault(fault)))

    async def _repeat_stream_fault(self, fault: StreamFault) -> None:
        kind = None if fault.streams == "all" else fault.streams
        while True:
            await asyncio.sleep(fault.every_s)
            if fault.kind == "drop":
                self.drop_streams(kind)
            else:
                self.silence_streams(kind)


async def run_sandbox(
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    keepalive_s: float = 6.0,
    engine: Sequence[str] | None = None,
    challenge: str | None = None,
    faults: Sequence[str] = (),
    quirks: Sequence[str] = (),
    opponent: bool = True,
    print_line: Callable[[str], None] | None = None,
    arena: str | None = None,
    humans: Sequence[int] = (),
) -> None:
    """Run the sandbox until cancelled, with a bot account and a human sparring partner.

    Prints `url: <URL>` and one `token: <username> <token> <bot|human>` line per account;
    at the stop, `games: ...` with how many games it left unrated as lila would.
    The human account is played by the built-in opponent (random moves, or `engine`); it
    accepts every challenge, and with `challenge` ("<minutes>+<increment>[:<variant>]", e.g.
    "3+2" or "1+1:crazyhouse") it also challenges the bot account again and again. With
    `opponent` False nobody plays it: a person or another client uses its token. With
    `arena` (see tournaments.parse_arena) an arena is created, the opponent joins it, and
    `arena: <id>` is printed. Each rating in `humans` is a person `human<rating>` with that
    rating, played by `engine` (else the built-in engine) at that strength; they accept
    every challenge (casual or rated), so the bot can be sent to play them.
    """
    emit = print_line or (lambda line: print(line, flush=True))
    parsed = [parse_fault(spec) for spec in faults]
    spec = None if challenge is None else _challenge_spec(challenge, DEFAULT_BOT)
    arena_spec = None if arena is None else parse_arena(arena)
    unknown = set(quirks) - set(QUIRK_NAMES)
    if unknown:
        raise ValueError(f"unknown quirks {sorted(unknown)}; known: {', '.join(QUIRK_NAMES)}")
    server = SandboxServer(keepalive_s=keepalive_s,
                           quirks=Quirks(**{name: True for name in quirks}))
    url = await server.start(host, port)
    try:
        server.add_account(DEFAULT_BOT, bot=True)
        server.add_account(DEFAULT_HUMAN, bot=False, scopes=HUMAN_ARENA_SCOPES)
        for fault in parsed:
            server.add_fault(fault)
        if opponent:
            await server.start_opponent(DEFAULT_HUMAN, engine=engine, challenge=spec,
                                        greeting="Good luck, have fun")
        else:
            log.info("the human account %s is free: play it with its token", DEFAULT_HUMAN)
        for rating in humans:
            await server.start_opponent(human_name(rating), engine=engine or BUILTIN_ENGINE,
                                        movetime_s=None, rating=rating,
                                        greeting="Good luck, have fun")
        emit(f"url: {url}")
        for account in server.lobby.accounts.all():
            emit(f"token: {account.username} {account.token} "
                 f"{'bot' if account.bot else 'human'}")
        if arena_spec is not None:
            arena_id = server.create_arena(arena_spec)
            server.arenas.join(server.account(DEFAULT_HUMAN), arena_id)
            emit(f"arena: {arena_id}")
        await _until_stopped()
    finally:
        emit(server.summary())
        with contextlib.suppress(Exception):
            await server.stop()


def human_name(rating: int) -> str:
    return f"{HUMAN_PREFIX}{rating}"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def _until_stopped() -> None:
    """Wait for Ctrl-C or SIGTERM (a service manager's stop), or for cancellation.

    The loop's own handlers are installed because a process started in the background by a
    shell inherits SIGINT ignored, and the interpreter then never raises KeyboardInterrupt:
    the sandbox would not stop on Ctrl-C, and SIGTERM would kill it without its clean-up.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed = []
    for signum in STOP_SIGNALS:
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            log.debug("cannot handle %s here", signum)
    try:
        await stop.wait()
        log.info("stopping the sandbox")
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _challenge_spec(text: str, target: str) -> ChallengeSpec:
    clock, _, variant = text.partition(":")
    minutes, sep, increment = clock.partition("+")
    try:
        limit_s = round(float(minutes) * 60)
        increment_s = int(increment) if sep else 0
    except ValueError:
        raise ValueError(f"challenge {text!r}: expected <minutes>+<increment>[:<variant>], "
                         "e.g. 3+2 or 1+1:crazyhouse") from None
    spec = ChallengeSpec(target, limit_s, increment_s, variant=variant or "standard")
    try:
        ChallengeRequest.parse(spec.form())
    except ApiError as exc:
        raise ValueError(f"challenge {text!r}: {exc.message}") from None
    return spec
