"""Correspondence games: which games wait for us and in what order, and end to end on the
sandbox: the bot visits, moves and leaves, holds no real-time slot, carries on after a
restart, and records a game that ended between visits."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import sys
from collections.abc import Callable
from pathlib import Path

import chess
import chess.pgn

from bot.engines.pool import EnginePool, EngineSpec
from bot.game.conduct import TakebackLedger
from bot.game.correspondence import CorrespondenceVisitor, Waiting, our_turns
from bot.game.game import Game, Me
from bot.game.hooks import GameHooks
from bot.game.metrics import Metrics, ThinkingLoad
from bot.lichess.client import Lichess
from bot.lichess.events import GameInfo
from bot.ops.config import Config, CorrespondenceConfig
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAKE_ENGINE,
    GUARD_S,
    assert_legal,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
    wait_for,
)


def entry(game_id: str, *, speed: str = "correspondence", my_turn: bool = True,
          left: object = 3600) -> dict[str, object]:
    return {"gameId": game_id, "speed": speed, "isMyTurn": my_turn, "secondsLeft": left,
            "opponent": {"id": "pal", "username": "Pal"}}


def test_our_turns_are_correspondence_games_closest_to_the_deadline_first() -> None:
    playing = {"nowPlaying": [
        entry("later", left=86400), entry("soon", left=600), entry("theirs", my_turn=False),
        entry("blitz", speed="blitz", left=10), entry("nodeadline", left=None),
        "junk", {"speed": "correspondence", "isMyTurn": True},  # no game id
    ]}
    waiting = our_turns(playing)
    assert [w.game_id for w in waiting] == ["soon", "later", "nodeadline"]
    assert waiting[0].opponent == "Pal" and waiting[0].seconds_left == 600


def test_our_turns_of_a_malformed_reply_is_empty() -> None:
    replies: tuple[object, ...] = (None, [], {"nowPlaying": "x"}, {"nowPlaying": [None]}, "t")
    for raw in replies:
        assert our_turns(raw) == []


class Recorder:
    """A visit that only notes itself (and fails for one game, to show it stays inside)."""

    def __init__(self, game_id: str, visited: list[str], stop: asyncio.Event,
                 broken: str, wanted: int) -> None:
        self.game_id, self.visited, self.stop = game_id, visited, stop
        self.broken, self.wanted = broken, wanted
        self.status = "started"  # the game goes on after the visit

    async def run(self) -> None:
        self.visited.append(self.game_id)
        if len(self.visited) >= self.wanted:
            self.stop.set()
        if self.game_id == self.broken:
            raise RuntimeError("a visit that breaks")


async def test_the_visitor_visits_games_closest_to_their_deadline_first() -> None:
    async with SandboxServer(keepalive_s=0.5) as server:
        token = server.add_account(BOT, bot=True)
        server.add_account("pal", bot=False)
        slow = await server.pair(BOT, "pal", None, None, days=7)
        fast = await server.pair(BOT, "pal", None, None, days=1)
        await server.pair("pal", BOT, None, None, days=1)  # their move: not visited
        await server.pair(BOT, "pal", 180, 2)  # a real-time game: not the visitor's
        visited: list[str] = []
        stop = asyncio.Event()
        async with Lichess(server.url, token) as client:
            visitor = CorrespondenceVisitor(
                CorrespondenceConfig(think_s=1, checkin_interval_s=60), client,
                lambda game_id, _think_s: Recorder(game_id, visited, stop, fast, 2), stop)
            await asyncio.wait_for(visitor.run(), GUARD_S)
        assert visited == [fast, slow]  # the broken visit did not stop the next one


class Ending:
    """A visit that sees the game end (our move mated, say)."""

    status = "started"

    async def run(self) -> None:
        self.status = "mate"


def finish_info(game_id: str) -> GameInfo:
    return GameInfo(game_id=game_id, full_id=game_id + "abcd", color="white", variant="standard",
                    speed="correspondence", rated=False, source="friend", status="resign",
                    opponent_id="pal", opponent_name="Pal", winner="white")


async def test_the_visitor_records_each_end_no_visit_saw_once() -> None:
    recorded: list[str] = []

    async def record(info: GameInfo) -> None:
        recorded.append(info.game_id)
        if info.game_id == "broken":
            raise OSError("disk full")

    async with Lichess("http://127.0.0.1:9", "token") as client:  # never called
        visitor = CorrespondenceVisitor(CorrespondenceConfig(think_s=1), client,
                                  lambda _game_id, _think_s: Ending(), asyncio.Event(),
                                  finished_unwatched=record)
        await visitor.visit(Waiting("seen", 60.0, "Pal"))
        for game_id in ("seen", "broken", "away", "away"):
            visitor.on_game_finish(finish_info(game_id))
        await visitor.record_finished()  # a failing record is logged, the rest go on
    assert recorded == ["broken", "away"]


def corr_config(tmp_path: Path) -> Config:
    config = make_config(tmp_path, concurrency=1)
    speeds = (*config.challenge.speeds, "correspondence")
    # Each visit starts an engine: one that answers at once with a random legal move, as
    # these tests are about the visits, not the moves (a start of the built-in engine loads
    # seconds of compiled code).
    fake = (sys.executable, FAKE_ENGINE, "none", "0")
    # A one-second check-in is for the test only; the config allows 10 s at least.
    return dataclasses.replace(
        config, challenge=dataclasses.replace(config.challenge, speeds=speeds),
        engine=dataclasses.replace(config.engine, command=fake),
        correspondence=CorrespondenceConfig(think_s=0.1, checkin_interval_s=1.0))


async def opponent_moves(server: SandboxServer, token: str, game_id: str) -> None:
    """The opponent's move (the first legal one) over the Board API."""
    board = assert_legal(server.game_record(game_id))
    move = next(iter(board.legal_moves))
    status = await post_as(server, token, f"/api/board/game/{game_id}/move/{move.uci()}")
    assert status == 200


async def penpal_game(server: SandboxServer) -> tuple[str, Callable[[], int]]:
    """penpal challenges the bot (white) to a correspondence game and the bot makes its first
    move: the game id and a counter of its plies."""
    await server.challenge("penpal", BOT, None, None, days=3, color="black")
    game_id = await server.wait_for_game("penpal")

    def plies() -> int:
        return len(server.game_record(game_id).moves)

    await wait_for(lambda: plies() == 1)
    return game_id, plies


async def test_correspondence_game_is_visited_left_and_resumed_after_a_restart(
        tmp_path: Path) -> None:
    quiet_logs()
    config = corr_config(tmp_path)
    async with SandboxServer(keepalive_s=0.5) as server:
        pal = server.add_account("penpal", bot=False)
        blitzer = server.add_account("blitzer", bot=False)
        token = server.add_account(BOT, bot=True)
        async with running_bot(server, config, token=token):
            game_id, plies = await penpal_game(server)
            # Moved, then left: the game stream is closed while the opponent thinks.
            await wait_for(lambda: not server.lobby.hub.watching(game_id, BOT))
            await opponent_moves(server, pal, game_id)
            await wait_for(lambda: plies() == 3)  # found by the periodic check-in
            # The correspondence game holds no slot: a real-time game starts (concurrency 1).
            await server.challenge("blitzer", BOT, 60, 0)
            live = await server.wait_for_game("blitzer")
            assert live != game_id
            server.end_game(live, "draw")
            await wait_for(lambda: not server.lobby.hub.watching(game_id, BOT))
        # The bot is stopped; the opponent moves; the restarted bot finds it its turn.
        await opponent_moves(server, pal, game_id)
        assert plies() == 4
        async with running_bot(server, config, token=token):
            await wait_for(lambda: plies() == 5)
        record = server.game_record(game_id)
        assert record.status == "started" and record.white.lower() == BOT
        board = assert_legal(record)
        assert board.turn == chess.BLACK
        assert blitzer  # the blitzer's account played the real-time game


async def test_a_correspondence_challenge_never_waits_for_a_real_time_slot(
        tmp_path: Path) -> None:
    """Concurrency 1, taken by a real-time game: a correspondence challenge is accepted at
    once, and the bot makes its first move there while the real-time game goes on."""
    quiet_logs()
    config = corr_config(tmp_path)
    # The blitzer never moves: the bot must not abort that game while the test runs.
    config = dataclasses.replace(config, game=dataclasses.replace(config.game,
                                                                  abort_after_s=60))
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_account("penpal", bot=False)
        server.add_account("blitzer", bot=False)
        token = server.add_account(BOT, bot=True)
        async with running_bot(server, config, token=token):
            await server.challenge("blitzer", BOT, 600, 0)
            live = await server.wait_for_game("blitzer")
            _game_id, plies = await penpal_game(server)
            assert plies() == 1
            assert not server.game_record(live).finished  # the slot was never freed
            server.end_game(live, "draw")


async def test_a_visit_that_cannot_think_leaves_without_resigning(tmp_path: Path) -> None:
    """No engine today: the game waits for the next visit (it has days), never resigned."""
    quiet_logs()
    config = corr_config(tmp_path)
    broken = EngineSpec((sys.executable, "-c", "import sys; sys.exit(3)"))
    async with SandboxServer(keepalive_s=0.5) as server:
        token = server.add_account(BOT, bot=True)
        server.add_account("pal", bot=False)
        game_id = await server.pair(BOT, "pal", None, None, days=3)
        await server.pair("pal", BOT, None, None, days=3)
        async with Lichess(server.url, token) as client:
            engines = EnginePool(broken, spare=False)
            visit = Game(game_id, client=client, config=config, engines=engines,
                         me=Me(BOT, BOT), hooks=GameHooks(), load=ThinkingLoad(),
                         metrics=Metrics(), ledger=TakebackLedger(tmp_path, 0), think_s=0.1)
            outcome = await asyncio.wait_for(visit.run(), GUARD_S)
            await engines.close()
        assert outcome.status == "started" and outcome.reason.startswith("gave up")
        assert server.game_record(game_id).status == "started"
        assert not server.lobby.hub.watching(game_id, BOT)


async def test_a_game_that_ends_between_visits_gets_its_pgn(tmp_path: Path) -> None:
    quiet_logs()
    config = corr_config(tmp_path)
    async with SandboxServer(keepalive_s=0.5) as server:
        pal = server.add_account("penpal", bot=False)
        token = server.add_account(BOT, bot=True)
        async with running_bot(server, config, token=token):
            game_id, plies = await penpal_game(server)
            await opponent_moves(server, pal, game_id)
            await wait_for(lambda: plies() == 3)
            await wait_for(lambda: not server.lobby.hub.watching(game_id, BOT))
            status = await post_as(server, pal, f"/api/board/game/{game_id}/resign")
            assert status == 200
            pgn_file = config.pgn.dir / f"{game_id}.pgn"
            await wait_for(pgn_file.exists)
        text = pgn_file.read_text(encoding="utf-8")
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors
    assert text.count("[Event ") == 1  # written once
    assert game.headers["Result"] == "1-0" and game.headers["White"].lower() == BOT
    assert [move.uci() for move in game.mainline_moves()] == list(
        server.game_record(game_id).moves)
    assert game.headers["Site"].endswith(game_id) and game.headers["Termination"] == "Normal"
