"""The status page's parts without a network: the feed's events, the finished cards, the
eval recorder, /metrics through prometheus-client's parser, the warning ring, the password."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import chess
import chess.engine
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from bot.engines.searchline import SearchLine
from bot.game.game import GameSnapshot
from bot.game.hooks import GameContext, LastSearch, SourcedMove
from bot.game.metrics import GameOutcome, Metrics, MoveTiming
from bot.lichess.client import EVENT_STREAM_KIND, Lichess, endpoint_kind
from bot.lichess.events import ChatLine, Player
from bot.ops.config import WatchConfig
from bot.watch.feed import FINISHED_KEPT_S, EvalRecorder, Feed
from bot.watch.prometheus import registry_for
from bot.watch.server import (
    LOOP_STALL_S,
    PASSWORD_ENV,
    Watch,
    WatchError,
    WatchSettings,
    authorized,
)
from bot.watch.view import time_control
from bot.watch.warnings import WarningRing

TOKEN = "lip_averysecrettoken123"
CONTEXT = GameContext(game_id="Qa7bX1pz", variant="standard", speed="blitz", rated=True,
                      me="kibitz", color=chess.WHITE,
                      white=Player("kibitz", "kibitz", "BOT", 2000),
                      black=Player("alice", "alice", None, 1900), initial_fen="startpos",
                      clock_initial_s=180.0, clock_increment_s=2.0)


@dataclass
class FakeGame:
    """What the feed reads of a game in progress."""

    board: chess.Board = field(default_factory=chess.Board)
    clocks_s: tuple[float, float] = (180.0, 180.0)
    last_search: LastSearch | None = None
    chat: deque[ChatLine] = field(default_factory=deque)
    mover: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(engine_pid=None,
                                                                           last_search=None))

    def snapshot(self) -> GameSnapshot:
        return GameSnapshot(game_id=CONTEXT.game_id, context=CONTEXT, board=self.board.copy(),
                            our_clock_s=self.clocks_s[0], their_clock_s=self.clocks_s[1],
                            last_search=self.last_search,
                            our_turn=self.board.turn == chess.WHITE)


class Clock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def events(messages: list[str]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for message in messages:
        name_line, data_line = message.strip().split("\n")
        found.append((name_line.removeprefix("event: "),
                      json.loads(data_line.removeprefix("data: "))))
    return found


def waiting(page: asyncio.Queue[str | None]) -> str:
    """The message already waiting in a page's queue (a message, not the "go away" None)."""
    message = page.get_nowait()
    assert message is not None
    return message


@pytest.fixture
async def client() -> Any:
    lichess = Lichess("http://127.0.0.1:9", TOKEN)
    yield lichess
    await lichess.close()


def fake_bot(client: Lichess, game: FakeGame | None = None,
             arenas: Sequence[dict[str, Any]] = ()) -> SimpleNamespace:
    return SimpleNamespace(games={CONTEXT.game_id: game} if game else {}, queue=deque(),
                           metrics=Metrics(), accepting=True, client=client,
                           book=SimpleNamespace(bots_capped_until=0.0),
                           arenas=SimpleNamespace(summaries=lambda: list(arenas)))


def searched(board: chess.Board, cp: int) -> LastSearch:
    move = next(iter(board.legal_moves))
    return board.copy(), SearchLine(
        depth=9, nodes_per_s=250_000, nodes=12345, pv=(move,),
        score=chess.engine.PovScore(chess.engine.Cp(cp), chess.WHITE))


async def test_a_page_gets_everything_then_only_what_changed(client: Lichess) -> None:
    game = FakeGame()
    clock = Clock()
    feed = Feed(fake_bot(client, game), WarningRing(), base_url="https://lichess.org/",
                clock=clock, memory=lambda: {1: 10_000_000})
    page = feed.subscribe()
    name, hello = events([waiting(page)])[0]
    assert name == "hello"
    (first,) = hello["games"]
    assert first["opponent"] == {"name": "alice", "title": None, "rating": 1900}
    assert first["time_control"] == "3+2"
    assert first["svg"].startswith("<svg")
    assert first["url"] == "https://lichess.org/Qa7bX1pz"
    assert hello["service"]["memory"]["total_bytes"] == 10_000_000
    assert hello["service"]["event_stream"] == "disconnected"

    game.clocks_s = (170.0, 175.0)  # the clocks alone: the page ticks them itself
    clock.now_s += 1
    assert [n for n, _ in events(feed.sample())] == []

    game.board.push_san("e4")
    game.board.push_san("c5")
    game.last_search = searched(game.board, 35)
    game.chat.append(ChatLine("player", "alice", "<b>hi</b>"))
    (name, card), = events(feed.sample())
    assert name == "game"
    assert card["svg"].startswith("<svg")  # the board moved: drawn again
    assert card["search"]["depth"] == 9 and card["search"]["nps"] == 250_000
    assert card["search"]["pv"].startswith("2. ")
    assert card["search"]["score"] == "+0.35"
    assert card["chat"] == [{"room": "player", "user": "alice", "text": "<b>hi</b>"}]
    assert card["clocks"] == {"white_s": 170.0, "black_s": 175.0, "running": "white"}

    game.last_search = searched(game.board, -20)  # a new search, same board: no SVG
    (name, card), = events(feed.sample())
    assert "svg" not in card and card["search"]["score"] == "-0.20"

    client.open_streams.add(EVENT_STREAM_KIND)
    (name, service), = events(feed.sample())
    assert name == "service" and service["event_stream"] == "connected"
    feed.unsubscribe(page)
    assert feed.pages == 0


async def test_a_finished_game_keeps_its_result_for_a_while(client: Lichess) -> None:
    game = FakeGame()
    bot = fake_bot(client, game)
    clock = Clock()
    feed = Feed(bot, WarningRing(), base_url="https://lichess.org", clock=clock,
                memory=dict)
    feed.sample()  # seen while nobody watches
    del bot.games[CONTEXT.game_id]
    bot.metrics.finished(GameOutcome(CONTEXT.game_id, "mate", "white", chess.WHITE, (),
                                     "finished"))
    page = feed.subscribe()  # a page opened after the game ended still shows it
    (_, hello), = events([waiting(page)])
    (card,) = hello["games"]
    assert card["finished"]["result"] == "win"
    assert card["finished"]["score"] == "1-0"
    assert card["finished"]["pgn"] == "https://lichess.org/game/export/Qa7bX1pz"
    assert card["svg"].startswith("<svg")  # drawn for the page from the last position seen
    assert hello["service"]["games_today"] == 1
    clock.now_s += FINISHED_KEPT_S + 1
    assert ("gone", {"id": CONTEXT.game_id}) in events(feed.sample())
    assert feed.state()["games"] == []


async def test_the_service_shows_our_arenas(client: Lichess) -> None:
    arena = {"id": "spring24", "name": "Bot Arena", "status": "started", "joined": True,
             "withdrawn": False, "done": False, "problem": None, "rank": 3, "score": 7,
             "games": 4, "seconds_to_start": None, "seconds_to_finish": 610.0}
    arenas = [arena]
    feed = Feed(fake_bot(client, arenas=arenas), WarningRing(), base_url="https://lichess.org",
                clock=Clock(), memory=dict)
    page = feed.subscribe()
    (_, hello), = events([waiting(page)])
    assert hello["service"]["tournaments"] == [arena]
    arenas[0] = {**arena, "rank": 2, "score": 9, "games": 5}  # a game won: a new standing
    (name, service), = events(feed.sample())
    assert name == "service"
    assert service["tournaments"][0]["rank"] == 2 and service["tournaments"][0]["score"] == 9


def test_the_eval_recorder_keeps_white_centipawns_by_ply() -> None:
    evals: dict[int, int] = {}
    ended: list[bool] = []
    recorder = EvalRecorder(evals, on_finished=lambda: ended.append(True))
    board = chess.Board()
    black = chess.engine.PovScore(chess.engine.Cp(50), chess.BLACK)
    recorder.our_move(1, board, SourcedMove(chess.Move.from_uci("e7e5"), "engine",
                                            SearchLine(score=black)))
    mate = chess.engine.PovScore(chess.engine.Mate(3), chess.WHITE)
    recorder.our_move(2, board, SourcedMove(chess.Move.from_uci("e2e4"), "engine",
                                            SearchLine(score=mate)))
    recorder.our_move(4, board, SourcedMove(chess.Move.from_uci("d2d4"), "book"))
    assert evals == {2: -50, 3: 1000}  # after the move; a mate at the edge; a book move: none


async def test_metrics_parse_and_name_things_as_prometheus_does(client: Lichess) -> None:
    game = FakeGame()
    game.mover.last_search = searched(game.board, 35)
    bot = fake_bot(client, game)
    metrics: Metrics = bot.metrics
    for overhead_s in (0.0005, 0.003, 0.003, 2.0):
        metrics.moved(MoveTiming("Qa7bX1pz", 1, overhead_s, 0.1, "engine"))
    metrics.finished(GameOutcome("a", "mate", "white", chess.BLACK, (), "finished"))
    metrics.finished(GameOutcome("b", "aborted", None, chess.WHITE, (), "finished"))
    metrics.challenge_decided("c1", "bob", "standard blitz rated", "declined", "timeControl",
                              "too fast")
    client.tally.request("move:Qa7bX1pz")
    client.tally.request("move:other")
    client.tally.too_many("challenge:accept")
    client.budget.dropped_chat = 3
    registry = registry_for(bot, uptime_s=lambda: 12.5, memory=lambda: {1: 100, 2: 50})
    text = generate_latest(registry).decode()
    assert TOKEN not in text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples["kibitz_moves_total", ()] == 4
    assert samples["kibitz_move_overhead_seconds_count", ()] == 4
    assert samples["kibitz_move_overhead_seconds_bucket", (("le", "0.005"),)] == 3
    assert samples["kibitz_move_overhead_seconds_bucket", (("le", "+Inf"),)] == 4
    assert samples["kibitz_move_overhead_seconds_sum", ()] == pytest.approx(2.0065)
    assert samples["kibitz_games_finished_total", (("result", "loss"),)] == 1
    assert samples["kibitz_games_finished_total", (("result", "aborted"),)] == 1
    assert samples["kibitz_challenges_total",
                   (("decision", "declined"), ("reason", "timeControl"))] == 1
    assert samples["kibitz_requests_total", (("kind", "move"),)] == 2
    assert samples["kibitz_rate_limited_total", (("kind", "challenge:accept"),)] == 1
    assert samples["kibitz_pv_lines_dropped_total", ()] == 3
    assert samples["kibitz_process_tree_memory_bytes", ()] == 150
    assert samples["kibitz_games_in_progress", ()] == 1
    assert samples["kibitz_engine_nodes_per_second", ()] == 250_000
    assert samples["kibitz_up_seconds", ()] == 12.5
    assert samples["kibitz_event_stream_connected", ()] == 0


def test_endpoint_kinds_drop_the_game_id() -> None:
    assert endpoint_kind("move:Qa7bX1pz") == "move"
    assert endpoint_kind("stream:game:Qa7bX1pz") == "stream:game"
    assert endpoint_kind("stream:event") == "stream:event"
    assert endpoint_kind("challenge:accept") == "challenge:accept"


def test_the_warning_ring_masks_the_token_and_forgets_the_oldest() -> None:
    ring = WarningRing([TOKEN], kept=2)
    logger = logging.getLogger("tests.watch.ring")
    logger.addHandler(ring)
    try:
        logger.info("not kept")
        logger.warning("first")
        logger.warning("the token %s leaked", TOKEN)
        logger.error("third")
    finally:
        logger.removeHandler(ring)
    assert ring.entries[0].message.startswith("the token lip_")
    assert all(TOKEN not in w.message for w in ring.entries)
    assert [w.level for w in ring.entries] == ["WARNING", "ERROR"]
    assert ring.count == 3


def test_loopback_by_default_and_a_password_beyond_it() -> None:
    assert WatchConfig().host == "127.0.0.1"
    assert WatchSettings.resolve(WatchConfig(), {}).password is None
    with pytest.raises(WatchError, match=r"watch.password .*KIBITZ_WATCH_PASSWORD"):
        WatchSettings.resolve(WatchConfig(host="0.0.0.0"), {})
    with pytest.raises(WatchError):
        WatchSettings.resolve(WatchConfig(host="bot.example.org"), {})
    assert WatchSettings.resolve(WatchConfig(host="::1"), {}).host == "::1"
    settings = WatchSettings.resolve(WatchConfig(host="0.0.0.0", password="in config"),
                                     {PASSWORD_ENV: "from env"})
    assert settings.password == "from env"


def test_a_container_secret_gives_the_password(tmp_path: Path) -> None:
    beyond = WatchConfig(host="0.0.0.0")
    with pytest.raises(WatchError, match=r"the secret .*/watch-password"):
        WatchSettings.resolve(beyond, {}, secrets_dir=tmp_path)
    (tmp_path / "watch-password").write_text("from secret\n")
    assert WatchSettings.resolve(beyond, {}, secrets_dir=tmp_path).password == "from secret"
    assert WatchSettings.resolve(beyond, {PASSWORD_ENV: "from env"},
                                 secrets_dir=tmp_path).password == "from env"
    (tmp_path / "watch-password").write_text("\n")
    with pytest.raises(WatchError, match=r"watch-password is empty"):
        WatchSettings.resolve(beyond, {}, secrets_dir=tmp_path)


@pytest.mark.parametrize(("header", "ok"), [
    (None, False),
    ("Basic " + "eDpzZWNyZXQ=", True),  # x:secret
    ("Basic " + "eDp3cm9uZw==", False),  # x:wrong
    ("Basic " + "c2VjcmV0", False),  # "secret", no colon
    ("Basic !!!", False),
    ("Bearer secret", False),
])
def test_the_password_is_checked(header: str | None, ok: bool) -> None:
    assert authorized(header, "secret") is ok


@pytest.mark.parametrize(("initial_s", "increment_s", "shown"), [
    (180.0, 2.0, "3+2"), (15.0, 0.0, "¼+0"), (30.0, 1.0, "½+1"), (90.0, 0.0, "1.5+0"),
    (None, None, "-"),
])
def test_time_controls_as_lichess_writes_them(initial_s: float | None,
                                             increment_s: float | None, shown: str) -> None:
    assert time_control(initial_s, increment_s) == shown


async def test_healthz_wants_the_event_stream_and_a_turning_loop(client: Lichess) -> None:
    clock = Clock()
    watch = Watch(WatchSettings("127.0.0.1", 0, None), base_url="https://lichess.org",
                  token=TOKEN, clock=clock)
    watch.attach(fake_bot(client))
    ok, why = watch.healthy()
    assert not ok and "event stream" in why
    client.open_streams.add(EVENT_STREAM_KIND)
    assert watch.healthy() == (True, "ok")
    clock.now_s += LOOP_STALL_S + 1  # no heartbeat since: the loop is stuck
    ok, why = watch.healthy()
    assert not ok and "has not turned" in why
