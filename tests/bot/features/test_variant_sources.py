"""Books, Syzygy tables and the online services follow the game's variant."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import chess
import chess.variant
import pytest
from aiohttp import web

from bot.features.book import OpeningBook
from bot.features.movesource import MoveSources, TablebaseSource
from bot.features.online import OnlineEndpoints, OnlineSources, SourceSettings
from bot.features.tablebase import Syzygy, rank_root_moves
from bot.ops.config import Config, parse_config
from sandbox.online import OnlineFixtures, register_online_routes
from tests.bot.book_files import write_book
from tests.bot.features.test_movesource import CONTEXT
from tests.bot.loopback import serving

# White's rook takes the queen next to Black's king: the explosion wins on the spot.
ATOMIC_WIN = "8/8/8/8/8/8/kq6/1R5K w - - 0 1"


def test_each_variant_has_its_own_books(tmp_path: Path) -> None:
    atomic = chess.variant.AtomicBoard()
    standard = write_book(tmp_path / "standard.bin", [(chess.Board(), "e2e4", 10)])
    atomic_book = write_book(tmp_path / "atomic.bin", [(atomic, "g1f3", 10)])
    with OpeningBook({"standard": (standard,), "atomic": (atomic_book,)}) as book:
        found = book.probe(atomic, "atomic")
        assert found is not None and found.move.uci() == "g1f3" and found.book == atomic_book
        assert book.probe(chess.variant.KingOfTheHillBoard(), "kingOfTheHill") is None
        found = book.probe(chess.Board(), "fromPosition")  # set-up positions: standard books
        assert found is not None and found.move.uci() == "e2e4"


def test_atomic_tables_cover_atomic_boards_only(tmp_path: Path) -> None:
    for name in ("KQvKR.atbw", "KQvKR.rtbw"):  # names only: covers() probes nothing
        (tmp_path / name).write_bytes(b"")
    atomic = Syzygy([tmp_path], chess.variant.AtomicBoard)
    standard = Syzygy([tmp_path])
    try:
        assert atomic.max_pieces == standard.max_pieces == 4
        assert atomic.covers(chess.variant.AtomicBoard(ATOMIC_WIN))
        assert not atomic.covers(chess.Board(ATOMIC_WIN))
        assert not standard.covers(chess.variant.AtomicBoard(ATOMIC_WIN))
    finally:
        atomic.close()
        standard.close()


def test_root_ranking_knows_a_variant_win() -> None:
    verdict = rank_root_moves(chess.variant.AtomicBoard(ATOMIC_WIN), lambda board: (0, 0))
    assert verdict is not None
    assert (verdict.wdl, verdict.best_move.uci()) == (2, "b1b2")


def test_each_variant_game_gets_its_own_tables(tmp_path: Path) -> None:
    config = parse_config(f"""
tablebase:
  syzygy_paths: ["{tmp_path}"]
  variant_syzygy_paths: {{atomic: ["{tmp_path}"]}}
""")
    assert isinstance(config, Config)
    sources = MoveSources.from_config(config, server_url="http://127.0.0.1:1", session=None)
    try:
        def tables(variant: str) -> list[Syzygy]:
            context = dataclasses.replace(CONTEXT, variant=variant)
            return [s.syzygy for s in sources(context) if isinstance(s, TablebaseSource)]
        assert tables("atomic") == [sources.variant_syzygy["atomic"]]
        assert tables("chess960") == [sources.syzygy]
        assert tables("horde") == []
    finally:
        sources.close()


@pytest.fixture
async def online() -> AsyncIterator[tuple[OnlineSources, OnlineFixtures]]:
    app = web.Application()
    fixtures = register_online_routes(app)
    async with serving(app) as url, aiohttp.ClientSession() as session:
        settings = SourceSettings(enabled=True, timeout_s=2.0, max_misses=3, max_pieces=7)
        yield OnlineSources(session, OnlineEndpoints(url, url, url), online_tablebase=settings,
                            explorer=dataclasses.replace(settings, enabled=False),
                            cloud_eval=dataclasses.replace(settings, enabled=False)), fixtures


async def test_the_online_tablebase_is_asked_for_the_games_variant(
        online: tuple[OnlineSources, OnlineFixtures]) -> None:
    sources, fixtures = online
    fixtures.add_tablebase(ATOMIC_WIN, "win", [("b1b2", "loss")],
                           variant=chess.variant.AtomicBoard)
    answer = await sources.probe(chess.variant.AtomicBoard(ATOMIC_WIN), "atomic")
    assert answer.move is not None and answer.move.move.uci() == "b1b2"
    asked = fixtures.requests["tablebase"]
    # The standard table does not know the atomic position; horde has no tablebase at all.
    assert (await sources.probe(chess.Board(ATOMIC_WIN), "standard")).move is None
    assert (await sources.probe(chess.variant.HordeBoard(), "horde")).move is None
    assert fixtures.requests["tablebase"] == asked + 1
