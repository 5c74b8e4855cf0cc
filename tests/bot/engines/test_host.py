"""Games' engines forked by the engine host: each keeps its own transposition table from move
to move, and a crashed one is replaced as any engine is, while the host serves on."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import chess
import chess.engine
import pytest

from bot.engines.host import EngineHost, socket_path
from bot.engines.pool import Engine, EngineFailure, EnginePool, EngineSpec

# A middle game whose depth-8 search takes some thousands of nodes from an empty table.
FEN = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8"
DEPTH = chess.engine.Limit(depth=8)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[EngineHost]:
    running = EngineHost(socket_path(tmp_path))
    await running.start(900)
    try:
        yield running
    finally:
        await running.close()


async def _nodes(engine: Engine, board: chess.Board, game: str) -> int:
    """The nodes the engine reports for its depth-8 search of `board` in `game`."""
    line = (await engine.think(board, DEPTH, hard_limit_s=60, game=game)).line
    assert line is not None and line.nodes is not None
    return line.nodes


async def test_each_game_keeps_its_own_table_from_move_to_move(host: EngineHost) -> None:
    pool = EnginePool(EngineSpec(host.engine_command, {"Hash": 16}), spare=False)
    try:
        first, second = await pool.acquire(), await pool.acquire()
        board = chess.Board(FEN)
        fresh = await _nodes(first, board, "a")
        # The same game again: the table kept from the last move answers most of the search.
        again = await _nodes(first, board, "a")
        # Another game's engine searches the same position: nothing of the first table helps.
        other = await _nodes(second, board, "b")
        assert again < fresh
        assert other == fresh
        # A new game on the first engine starts from an empty table again (ucinewgame).
        new_game = await _nodes(first, board, "c")
        assert new_game == fresh
    finally:
        await pool.close()


async def test_a_crashed_forked_engine_is_replaced_and_the_host_serves_on(
        host: EngineHost) -> None:
    pool = EnginePool(EngineSpec(host.engine_command, {"Hash": 8}), spare=False)
    try:
        engine = await pool.acquire()
        (child,) = host.children()
        os.kill(child, signal.SIGKILL)
        # python-chess loses a search started while the end of the process is on its way (it
        # waits for `readyok` forever): the crash is seen first, as it is mid-game.
        async with asyncio.timeout(30):
            while engine.alive:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        with pytest.raises(EngineFailure, match="dead"):
            await engine.think(chess.Board(), DEPTH, hard_limit_s=60, game="g")
        replacement = await pool.replace(engine)
        thought = await replacement.think(chess.Board(), DEPTH, hard_limit_s=60, game="g")
        assert chess.Board().is_legal(thought.move)
        assert host.alive and len(host.children()) == 1 and child not in host.children()
    finally:
        await pool.close()
    assert host.alive


async def test_without_the_host_the_same_command_plays_in_its_own_process(
        tmp_path: Path) -> None:
    absent = EngineHost(socket_path(tmp_path))  # never started
    pool = EnginePool(EngineSpec(absent.engine_command, {"Hash": 8}), spare=False)
    try:
        engine = await pool.acquire()
        thought = await engine.think(chess.Board(), DEPTH, hard_limit_s=60, game="g")
        assert chess.Board().is_legal(thought.move)
    finally:
        await pool.close()


async def test_a_host_that_dies_is_started_again(host: EngineHost,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.engines.host.HOST_RETRY_S", 0.0)
    keeper = asyncio.ensure_future(host.keep_running(900))
    try:
        first = host.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        async with asyncio.timeout(900):  # a safety net: the new host loads cached code
            while not (host.alive and host.pid != first and host.path.exists()):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        pool = EnginePool(EngineSpec(host.engine_command, {"Hash": 8}), spare=False)
        try:
            await pool.acquire()
            assert len(host.children()) == 1  # forked by the new host
        finally:
            await pool.close()
    finally:
        keeper.cancel()
