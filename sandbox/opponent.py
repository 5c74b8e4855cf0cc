"""A sandbox-side opponent: a client of the sandbox that accepts or sends challenges and plays.

It talks to the server over HTTP like any other client (the Board API for a human account,
the Bot API for a BOT), and picks moves at random or with any UCI engine through
python-chess's engine API.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import chess
import chess.engine

from sandbox.strength import Strength, strength_for
from sandbox.timecontrol import variant_board

log = logging.getLogger(__name__)

# Pause before reopening a stream that ended, and before re-sending a refused challenge.
RECONNECT_S = 0.5
RECHALLENGE_S = 2.0
DEFAULT_MOVETIME_S = 0.05
# A refused move (429, 5xx, no connection) is tried again this often, this far apart.
MOVE_ATTEMPTS = 5
RETRY_PAUSE_S = 0.5


@dataclass(frozen=True)
class ChallengeSpec:
    """What the opponent challenges its target with."""

    target: str
    clock_limit_s: int | None = 180
    increment_s: int | None = 2
    days: int | None = None
    variant: str = "standard"
    fen: str | None = None
    rated: bool = False
    color: str = "random"
    repeat: bool = True  # challenge again after each game, and after a refusal
    games: int | None = None  # with repeat: stop once this many games have started
    retry_s: float = RECHALLENGE_S  # pause before challenging again after a refusal

    def form(self) -> dict[str, str]:
        fields = {"rated": "true" if self.rated else "false", "color": self.color,
                  "variant": self.variant}
        if self.clock_limit_s is not None:
            fields["clock.limit"] = str(self.clock_limit_s)
            fields["clock.increment"] = str(self.increment_s or 0)
        elif self.days is not None:
            fields["days"] = str(self.days)
        if self.fen is not None:
            fields["fen"] = self.fen
        return fields


@dataclass
class OpponentSettings:
    engine: Sequence[str] | None = None  # UCI engine command; None plays random moves
    movetime_s: float | None = DEFAULT_MOVETIME_S  # None: let the engine use the clock
    accept: bool = True  # accept incoming challenges
    challenge: ChallengeSpec | None = None
    seed: int | None = None
    greeting: str | None = None  # said in the player room at the start of each game
    accept_draws: bool = False
    accept_takebacks: bool = False
    # Play a person of this rating: the engine is set to it (sandbox/strength.py).
    elo: int | None = None
    # Crazyhouse: drop a piece whenever one is in hand (the engine's best drop, or a random
    # one), else move as set. An engine may keep its pieces in hand for a whole game; a test
    # of the other side's drops needs them played.
    drops_first: bool = False


class Opponent:
    """Plays every game its account gets, until stopped."""

    def __init__(self, base_url: str, token: str, username: str, bot: bool,
                 settings: OpponentSettings) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.user_id = username.lower()
        self.api = "bot" if bot else "board"
        self.settings = settings
        self.random = random.Random(settings.seed)
        self.games_started: list[str] = []
        self.games_finished: list[str] = []
        self.challenges_sent: list[str] = []
        self._headers = {"Authorization": f"Bearer {token}"}
        self._session: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._main: asyncio.Task[None] | None = None
        self._engine: chess.engine.UciProtocol | None = None
        self._engine_transport: asyncio.SubprocessTransport | None = None
        self._engine_lock = asyncio.Lock()
        self._playing: set[str] = set()
        self._finished: dict[str, asyncio.Event] = {}
        self._may_move = asyncio.Event()
        self._may_move.set()
        self._moving = asyncio.Lock()  # held while a move is chosen and sent
        # What the engine was set to for `settings.elo` (None: full strength).
        self.strength: Strength | None = None

    def engine_config(self) -> dict[str, chess.engine.ConfigValue]:
        """The UCI options set on the engine so far, as python-chess sent them."""
        return {} if self._engine is None else dict(self._engine.config)

    async def hold_moves(self) -> None:
        """Make no more moves (game streams stay open, so the player is not gone); returns
        once no move is being chosen or sent, so the games' positions stay as they are."""
        self._may_move.clear()
        async with self._moving:
            pass

    def release_moves(self) -> None:
        self._may_move.set()

    def finished(self, game_id: str) -> asyncio.Event:
        """An event set once this opponent has seen `game_id` finish."""
        return self._finished.setdefault(game_id, asyncio.Event())

    async def start(self) -> None:
        if self.settings.engine is not None:
            argv = list(self.settings.engine)
            try:
                self._engine_transport, self._engine = await chess.engine.popen_uci(argv)
            except (OSError, chess.engine.EngineError) as exc:
                raise ValueError(f"cannot start the UCI engine {argv}: {exc}") from exc
            if self.settings.elo is not None:
                self.strength = strength_for(self.settings.elo, self._engine.options)
                await self._engine.configure(self.strength.options)
                log.info("opponent %s plays at %d: %s", self.username, self.settings.elo,
                         self.strength.describe())
        self._session = aiohttp.ClientSession(
            headers=self._headers, timeout=aiohttp.ClientTimeout(total=None, connect=5))
        self._main = asyncio.create_task(self._run_events(), name=f"opponent-{self.username}")

    async def stop(self) -> None:
        tasks = [*self._tasks, *([self._main] if self._main else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._session is not None:
            await self._session.close()
        try:
            if self._engine is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._engine.quit(), 2.0)
        finally:
            # closed after quit, or the transport outlives its loop (and kills a hung engine)
            if self._engine_transport is not None:
                self._engine_transport.close()
            self._engine, self._engine_transport = None, None

    def _spawn(self, coro: Any, name: str) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _lines(self, path: str, on_open: Callable[[], None] | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        assert self._session is not None
        async with self._session.get(self.base_url + path) as response:
            if response.status != 200:
                raise aiohttp.ClientResponseError(
                    response.request_info, (), status=response.status,
                    message=await response.text())
            if on_open is not None:
                on_open()
            async for raw in response.content:
                line = raw.strip()
                if line:
                    yield json.loads(line)

    async def _post(self, path: str, data: dict[str, str] | None = None) -> int:
        assert self._session is not None
        try:
            async with self._session.post(self.base_url + path, data=data) as response:
                if response.status >= 400:
                    log.debug("opponent %s: POST %s -> %s %s", self.username, path,
                              response.status, await response.text())
                return response.status
        except aiohttp.ClientError as exc:
            log.debug("opponent %s: POST %s failed: %r", self.username, path, exc)
            return 0

    async def _post_move(self, game_id: str, move: str) -> None:
        """Send a move, retrying a few times on 429, 5xx and network errors."""
        for _ in range(MOVE_ATTEMPTS):
            status = await self._post(f"/api/{self.api}/game/{game_id}/move/{move}")
            if status != 0 and status != 429 and status < 500:
                return
            await asyncio.sleep(RETRY_PAUSE_S)

    async def join_arena(self, arena_id: str, password: str | None = None,
                         team: str | None = None) -> int:
        """Join an arena over the API (POST /api/tournament/{id}/join, which needs the
        tournament:write scope); its games then arrive as gameStart like any other.
        Returns the HTTP status."""
        form = {k: v for k, v in (("password", password), ("team", team)) if v is not None}
        return await self._post(f"/api/tournament/{arena_id}/join", form)

    async def withdraw_arena(self, arena_id: str) -> int:
        return await self._post(f"/api/tournament/{arena_id}/withdraw")

    # --- events --------------------------------------------------------------------------

    async def _run_events(self) -> None:
        opened = False

        def first_open() -> None:
            nonlocal opened
            if not opened:
                opened = True
                self._schedule_challenge(0.0)

        while True:
            try:
                async for event in self._lines("/api/stream/event", first_open):
                    await self._on_event(event)
            except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as exc:
                log.debug("opponent %s: event stream ended: %r", self.username, exc)
            await asyncio.sleep(RECONNECT_S)

    async def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "challenge":
            challenge = event["challenge"]
            if (challenge["destUser"] or {}).get("id") == self.user_id and self.settings.accept:
                await self._post(f"/api/challenge/{challenge['id']}/accept")
        elif kind == "gameStart":
            game_id = event["game"]["gameId"]
            if game_id not in self._playing:
                self._playing.add(game_id)
                self.games_started.append(game_id)
                self._spawn(self._play(game_id), f"opponent-game-{game_id}")
        elif kind == "gameFinish":
            game_id = event["game"]["gameId"]
            if game_id not in self.games_finished:
                self.games_finished.append(game_id)
            self.finished(game_id).set()
            spec = self.settings.challenge
            if (spec is not None and spec.repeat
                    and (spec.games is None or len(self.games_started) < spec.games)
                    and event["game"].get("opponent", {}).get("id") == spec.target.lower()):
                self._schedule_challenge(spec.retry_s / 4)
        elif kind in ("challengeDeclined", "challengeCanceled"):
            challenge = event["challenge"]
            spec = self.settings.challenge
            if (spec is not None and spec.repeat and challenge["id"] in self.challenges_sent
                    and challenge["challenger"]["id"] == self.user_id):
                self._schedule_challenge(spec.retry_s)

    def _schedule_challenge(self, delay_s: float) -> None:
        if self.settings.challenge is not None:
            self._spawn(self._send_challenge(delay_s), "opponent-challenge")

    async def _send_challenge(self, delay_s: float) -> None:
        spec = self.settings.challenge
        assert spec is not None and self._session is not None
        await asyncio.sleep(delay_s)
        while True:
            try:
                async with self._session.post(f"{self.base_url}/api/challenge/{spec.target}",
                                              data=spec.form()) as response:
                    if response.status == 200:
                        self.challenges_sent.append((await response.json())["id"])
                        return
                    log.debug("opponent %s: challenge refused: %s %s", self.username,
                              response.status, await response.text())
            except aiohttp.ClientError as exc:
                log.debug("opponent %s: challenge failed: %r", self.username, exc)
            if not spec.repeat:
                return
            await asyncio.sleep(spec.retry_s)

    # --- one game ------------------------------------------------------------------------

    async def _play(self, game_id: str) -> None:
        color: chess.Color | None = None
        start = chess.Board()
        answered: set[str] = set()
        last_moves: str | None = None
        greeted = False
        # A stream that ends before the game does (dropped, replaced) is opened again.
        while not self.finished(game_id).is_set():
            try:
                async for event in self._lines(f"/api/{self.api}/game/stream/{game_id}"):
                    kind = event.get("type")
                    if kind == "gameFull":
                        color = chess.WHITE if event["white"].get("id") == self.user_id \
                            else chess.BLACK
                        fen = event.get("initialFen", "startpos")
                        # The variant's board: its rules, and python-chess tells a UCI engine
                        # (Fairy-Stockfish) the variant.
                        start = variant_board(event["variant"]["key"],
                                              None if fen == "startpos" else fen)
                        state = event["state"]
                        if not greeted and self.settings.greeting:
                            greeted = True
                            await self._post(f"/api/{self.api}/game/{game_id}/chat",
                                             {"room": "player", "text": self.settings.greeting})
                    elif kind == "gameState":
                        state = event
                    else:
                        continue
                    if state["status"] not in ("created", "started"):
                        return
                    assert color is not None
                    await self._answer_offers(game_id, state, color, answered)
                    if state["moves"] != last_moves:
                        last_moves = state["moves"]
                        board = start.copy()
                        for uci in state["moves"].split():
                            board.push_uci(uci)
                        if board.turn == color and not board.is_game_over():
                            await self._move(game_id, board, state)
            except aiohttp.ClientResponseError as exc:
                if 400 <= exc.status < 500 and exc.status != 429:
                    log.warning("opponent %s: cannot stream game %s: %s %s", self.username,
                                game_id, exc.status, exc.message)
                    return
                log.debug("opponent %s: game stream %s refused: %r", self.username, game_id, exc)
            except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as exc:
                log.debug("opponent %s: game stream %s ended: %r", self.username, game_id, exc)
            last_moves = None
            await asyncio.sleep(RECONNECT_S)

    async def _move(self, game_id: str, board: chess.Board, state: dict[str, Any]) -> None:
        while True:
            await self._may_move.wait()
            async with self._moving:
                if self._may_move.is_set():  # not held while this task waited for the lock
                    await self._post_move(game_id, await self._choose(board, state))
                    return

    async def _answer_offers(self, game_id: str, state: dict[str, Any], color: chess.Color,
                             answered: set[str]) -> None:
        them = "b" if color == chess.WHITE else "w"
        for offer, accept in (("draw", self.settings.accept_draws),
                              ("takeback", self.settings.accept_takebacks)):
            key = f"{offer}:{state['moves']}"
            if state.get(f"{them}{offer}") and key not in answered:
                answered.add(key)
                await self._post(f"/api/{self.api}/game/{game_id}/{offer}/"
                                 f"{'yes' if accept else 'no'}")

    async def _choose(self, board: chess.Board, state: dict[str, Any]) -> str:
        drops = ([move for move in board.legal_moves if move.drop is not None]
                 if self.settings.drops_first else [])
        if self._engine is None:
            return board.uci(self.random.choice(drops or list(board.legal_moves)))
        if self.settings.movetime_s is not None:
            limit = chess.engine.Limit(time=self.settings.movetime_s)
        else:
            limit = chess.engine.Limit(
                white_clock=state["wtime"] / 1000, black_clock=state["btime"] / 1000,
                white_inc=state["winc"] / 1000, black_inc=state["binc"] / 1000)
        if self.strength is not None and self.strength.nodes is not None:
            limit.nodes = self.strength.nodes
        try:
            async with self._engine_lock:
                # The engine's best drop: a random one ends the game before the other side drops.
                result = await self._engine.play(board, limit, root_moves=drops or None)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as exc:
            log.warning("opponent %s: engine failed (%r); playing a random move",
                        self.username, exc)
            result = chess.engine.PlayResult(None, None)
        if result.move is None:
            return board.uci(self.random.choice(list(board.legal_moves)))
        return board.uci(result.move)
