"""The move-source chain: book, tablebase and online sources in order, with a budget."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import aiohttp
import chess
import chess.engine
import pytest
from aiohttp import web

from bot.features.book import OpeningBook
from bot.features.movesource import (
    BookSource,
    MoveSourceChain,
    MoveSources,
    OnlineSource,
    TablebaseSource,
    tablebase_answer,
)
from bot.features.online import OnlineEndpoints, OnlineSources, SourceSettings
from bot.features.tablebase import RootProbe, Syzygy, TablebaseQuality
from bot.features.wiring import FeatureError, Features
from bot.game.hooks import GameContext, RootRestriction, SourcedMove
from bot.lichess.events import Player
from bot.ops.config import Config
from sandbox.online import OnlineFixtures, register_online_routes
from tests.bot.book_files import write_book
from tests.bot.loopback import serving

CONTEXT = GameContext(
    game_id="AbCd1234", variant="standard", speed="blitz", rated=False, me="Kibitz",
    color=chess.WHITE, white=Player("kibitz", "Kibitz", "BOT", 1500),
    black=Player("magnus", "Magnus", None, 2800), initial_fen="startpos",
    clock_initial_s=180.0, clock_increment_s=2.0,
)
KRK = "8/8/8/4k3/8/8/8/R3K3 w - - 0 60"


class Failing:
    name = "failing"

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        raise RuntimeError("broken source")


class Slow:
    name = "slow"

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        await asyncio.Event().wait()  # never answers: only a budget ends the wait
        return None


class Fixed:
    def __init__(self, answer: SourcedMove | RootRestriction | None) -> None:
        self.name = "fixed"
        self.answer = answer

    async def choose(self, board: chess.Board,
                     context: GameContext) -> SourcedMove | RootRestriction | None:
        return self.answer


@pytest.fixture
async def online() -> AsyncIterator[tuple[str, OnlineFixtures, aiohttp.ClientSession]]:
    app = web.Application()
    fixtures = register_online_routes(app)
    async with serving(app) as url, aiohttp.ClientSession() as session:
        yield url, fixtures, session


async def test_book_source(tmp_path: Path) -> None:
    path = write_book(tmp_path / "b.bin", [(chess.Board(), "d2d4", 3)])
    source = BookSource(OpeningBook({"standard": [path]}))
    answer = await source.choose(chess.Board(), CONTEXT)
    assert isinstance(answer, SourcedMove) and answer.move.uci() == "d2d4"
    assert answer.source == "book" and answer.line is None  # no search: the last one stands
    board = chess.Board()
    board.push_uci("d2d4")
    assert await source.choose(board, CONTEXT) is None


def test_tablebase_best_or_suggest() -> None:
    keep = tuple(chess.Move.from_uci(u) for u in ("a1a5", "a1a4"))
    verdict = RootProbe(wdl=2, best_move=keep[0], dtz=7, keeping_moves=keep)
    best = tablebase_answer(verdict, TablebaseQuality.BEST, "tablebase")
    assert isinstance(best, SourcedMove) and best.move == keep[0] and best.tablebase_wdl == 2
    suggest = tablebase_answer(verdict, TablebaseQuality.SUGGEST, "tablebase")
    assert isinstance(suggest, RootRestriction) and suggest.moves == keep
    without_dtz = tablebase_answer(replace(verdict, dtz_known=False), TablebaseQuality.BEST,
                                   "tablebase")
    assert isinstance(without_dtz, RootRestriction) and without_dtz.moves == keep
    only = replace(verdict, keeping_moves=keep[:1])
    assert isinstance(tablebase_answer(only, TablebaseQuality.SUGGEST, "tablebase"), SourcedMove)


async def test_tablebase_source_skips_what_the_tables_do_not_cover(tmp_path: Path) -> None:
    source = TablebaseSource(Syzygy([tmp_path]), "best")
    assert await source.choose(chess.Board(KRK), CONTEXT) is None  # no KRvK file


async def test_online_source_and_suggest(
        online: tuple[str, OnlineFixtures, aiohttp.ClientSession]) -> None:
    url, fixtures, session = online
    fixtures.add_tablebase(KRK, "win", [("a1a5", "loss"), ("a1a4", "loss")])
    fixtures.add_cloud_eval(chess.STARTING_FEN, "e2e4 e7e5", depth=40, cp=25)

    def sources() -> OnlineSources:
        on = SourceSettings(enabled=True)
        return OnlineSources(session, OnlineEndpoints(url, url, url), explorer=SourceSettings(),
                             cloud_eval=on, online_tablebase=on)

    best = await OnlineSource(sources(), "best").choose(chess.Board(KRK), CONTEXT)
    assert isinstance(best, SourcedMove) and best.source == "online_tablebase"
    assert best.tablebase_wdl == 2
    suggest = await OnlineSource(sources(), "suggest").choose(chess.Board(KRK), CONTEXT)
    assert isinstance(suggest, RootRestriction) and len(suggest.moves) == 2
    cloud = await OnlineSource(sources(), "best").choose(chess.Board(), CONTEXT)
    assert isinstance(cloud, SourcedMove) and cloud.source == "cloud_eval"
    assert cloud.line is not None and cloud.line.depth == 40
    assert [m.uci() for m in cloud.line.pv] == ["e2e4", "e7e5"]
    assert cloud.line.score == chess.engine.PovScore(chess.engine.Cp(25), chess.WHITE)


async def test_online_time_follows_the_time_control(
        online: tuple[str, OnlineFixtures, aiohttp.ClientSession]) -> None:
    url, fixtures, session = online
    fixtures.add_cloud_eval(chess.STARTING_FEN, "e2e4", depth=40, cp=25)
    fixtures.delay_s["cloud_eval"] = 60.0  # only the time control's budget can cut it
    on = SourceSettings(enabled=True, timeout_s=120.0, max_misses=0)
    sources = OnlineSources(session, OnlineEndpoints(url, url, url), explorer=SourceSettings(),
                            cloud_eval=on, online_tablebase=SourceSettings())
    bullet = replace(CONTEXT, clock_initial_s=30.0, clock_increment_s=0.0)
    assert await OnlineSource(sources, "best").choose(chess.Board(), bullet) is None  # 0.3 s
    fixtures.delay_s["cloud_eval"] = 0.6
    found = await OnlineSource(sources, "best").choose(chess.Board(), CONTEXT)  # 3+2
    assert isinstance(found, SourcedMove) and found.move.uci() == "e2e4"


async def test_chain_order_failures_and_restrictions() -> None:
    board = chess.Board()
    e4 = SourcedMove(chess.Move.from_uci("e2e4"), "first")
    d4 = SourcedMove(chess.Move.from_uci("d2d4"), "second")
    illegal = SourcedMove(chess.Move.from_uci("e2e5"), "bad")
    narrow = RootRestriction((chess.Move.from_uci("c2c4"), chess.Move.from_uci("e7e5")), "tb")
    chain = MoveSourceChain([Failing(), Fixed(None), Fixed(illegal), Fixed(e4), Fixed(d4)])
    assert await chain.choose(board, CONTEXT) == e4
    restricted = await MoveSourceChain([Fixed(narrow), Fixed(None)]).choose(board, CONTEXT)
    assert isinstance(restricted, RootRestriction)
    assert restricted.moves == (chess.Move.from_uci("c2c4"),)  # only the legal move is kept
    assert await MoveSourceChain([Fixed(narrow), Fixed(d4)]).choose(board, CONTEXT) == d4
    assert await MoveSourceChain([]).choose(board, CONTEXT) is None


async def test_chain_budget() -> None:
    chain = MoveSourceChain([Slow(), Fixed(SourcedMove(chess.Move.from_uci("e2e4"), "late"))])
    # The slow source never answers: only the 0.2 s budget can end the choice (the 30 s is
    # a guard against a hang, not a measure).
    choice = chain.choose(chess.Board(), CONTEXT, budget_s=0.2)
    assert await asyncio.wait_for(choice, 30) is None


def test_sources_from_config(tmp_path: Path) -> None:
    path = write_book(tmp_path / "b.bin", [(chess.Board(), "e2e4", 1)])
    config = Config()
    assert MoveSources.from_config(config, server_url="http://x", session=None)(CONTEXT) == []
    config = replace(config, book=replace(config.book, enabled=True,
                                          books={"standard": (path,)}),
                     tablebase=replace(config.tablebase, syzygy_paths=(tmp_path,),
                                       quality="suggest"))
    sources = MoveSources.from_config(config, server_url="http://x", session=None)
    names = [s.name for s in sources(CONTEXT)]
    assert names == ["book", "tablebase"]
    assert isinstance(sources.chain(CONTEXT), MoveSourceChain)
    sources.close()


async def test_online_sources_are_fresh_per_game() -> None:
    config = Config()
    config = replace(config, online=replace(config.online, cloud_eval=replace(
        config.online.cloud_eval, enabled=True)))
    async with aiohttp.ClientSession() as session:
        sources = MoveSources.from_config(config, server_url="http://x", session=lambda: session)
        first, second = sources(CONTEXT), sources(CONTEXT)
        assert [s.name for s in first] == ["online"]
        assert isinstance(first[0], OnlineSource) and isinstance(second[0], OnlineSource)
        assert first[0].sources is not second[0].sources  # misses are counted per game


async def test_features_name_an_unusable_book_or_table(tmp_path: Path) -> None:
    config = Config()
    missing_book = replace(config, book=replace(config.book, enabled=True,
                                                books={"standard": (tmp_path / "no.bin",)}))
    with pytest.raises(FeatureError, match=r"no\.bin"):
        Features(missing_book, url="http://x", token="t")
    missing_tables = replace(config, tablebase=replace(config.tablebase,
                                                       syzygy_paths=(tmp_path / "tb",)))
    with pytest.raises(FeatureError, match="tb"):
        Features(missing_tables, url="http://x", token="t")
    features = Features(config, url="http://x", token="t")
    hooks = features.hooks()
    assert hooks.move_sources is not None and list(hooks.move_sources(CONTEXT)) == []
    await features.close()
