"""Engine processes: start, options, thinking, warm-up, spare, and every way they fail."""

from __future__ import annotations

import asyncio
import asyncio.base_subprocess
import gc
import sys

import chess
import chess.engine
import pytest

from bot.engines import pool as pool_module
from bot.engines.pool import EngineFailure, EnginePool, EngineSpec, start_engine
from bot.engines.searchline import SearchLine
from tests.bot.e2e_support import FAKE_ENGINE, engine_command

FAST = chess.engine.Limit(time=0.05)
EVEN = chess.engine.PovScore(chess.engine.Cp(0), chess.WHITE)


def fake(mode: str, nth: int) -> EngineSpec:
    return EngineSpec((sys.executable, FAKE_ENGINE, mode, str(nth)),
                      {"Hash": 8})


async def test_an_engine_thinks_and_reports_its_search() -> None:
    engine = await start_engine(EngineSpec(tuple(engine_command()), {"Hash": 8, "NoSuchOption": 1}))
    try:
        thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g1")
        assert chess.Board().is_legal(thought.move)
        assert thought.line is not None and thought.line.pv and thought.line.depth is not None
        assert not thought.timed_out and thought.elapsed_s > 0  # within its hard limit
    finally:
        await engine.close()
    # Killed if `quit` was slow (a busy machine): gone once the child watcher has reaped it.
    async with asyncio.timeout(30):
        while engine.alive:  # noqa: ASYNC110 (a process exit has no event here)
            await asyncio.sleep(0.02)


async def test_a_missing_engine_is_a_clear_failure() -> None:
    with pytest.raises(EngineFailure, match="cannot start engine"):
        await start_engine(EngineSpec(("/nonexistent/engine",)))


@pytest.mark.parametrize("mode", ["crash", "illegal"])
async def test_a_crash_or_an_illegal_answer_is_an_engine_failure(mode: str) -> None:
    engine = await start_engine(fake(mode, 2))
    try:
        await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
        with pytest.raises(EngineFailure):
            await engine.think(chess.Board(), FAST, hard_limit_s=0.5, game="g")
    finally:
        await engine.close()


async def test_a_pv_about_another_move_is_cut_to_the_move_played() -> None:
    engine = await start_engine(fake("stalepv", 1))
    try:
        thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
        assert thought.line == SearchLine(depth=1, score=EVEN, nodes=1, nodes_per_s=1000,
                                          pv=(thought.move,))  # the rest of the line stays
        thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
        assert thought.line is not None
        assert thought.line.pv == (thought.move,)  # an honest PV is kept as it is
    finally:
        await engine.close()


async def test_a_line_other_than_the_first_is_shown_as_reported_for_the_move() -> None:
    """A limited level plays its second line: the line shown is that one, score and PV."""
    engine = await start_engine(fake("pick", 1))
    try:
        thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
    finally:
        await engine.close()
    assert thought.line is not None
    assert thought.line.score == chess.engine.PovScore(chess.engine.Cp(-20), chess.WHITE)
    assert thought.line.depth == 3 and len(thought.line.pv) == 2
    assert thought.line.pv[0] == thought.move


async def test_an_engine_that_says_nothing_of_its_search_leaves_no_line() -> None:
    engine = await start_engine(fake("silent", 1))
    try:
        silent, told = [await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
                        for _ in range(2)]
    finally:
        await engine.close()
    assert silent.line is None and chess.Board().is_legal(silent.move)
    assert told.line is not None and told.line.depth == 1  # the next search reports again


async def test_a_hung_engine_is_stopped_then_given_up() -> None:
    engine = await start_engine(fake("hang", 1))
    try:
        with pytest.raises(EngineFailure, match="failed while searching"):
            await engine.think(chess.Board(), FAST, hard_limit_s=0.3, game="g")
    finally:
        await engine.close()
    assert not engine.alive


async def test_pool_warms_up_keeps_a_spare_and_replaces() -> None:
    pool = EnginePool(EngineSpec(tuple(engine_command()), {"Hash": 8}), spare=True)
    keeper = asyncio.ensure_future(pool.keep_spare())
    try:
        name = await pool.warm_up()
        assert name and pool.name == name
        first = await pool.acquire()  # the warmed-up spare
        async with asyncio.timeout(10):
            while pool.running < 2:  # noqa: ASYNC110 (a new spare is on its way)
                await asyncio.sleep(0.02)
        second = await pool.replace(first)
        assert not first.alive and second.alive and second is not first
        await pool.release(second)
    finally:
        keeper.cancel()
        await asyncio.wait({keeper})
        await pool.close()
    assert pool.running == 0


async def test_warm_up_waits_for_an_engine_still_compiling(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh checkout's engine answers `isready` only once compiled (minutes on a slow
    machine): the warm-up waits for it, while a game's search gives up after START_TIMEOUT_S."""
    monkeypatch.setattr(pool_module, "START_TIMEOUT_S", 0.2)
    slow = fake("slowready", 1)  # each readyok a second late
    pool = EnginePool(slow, spare=False)
    assert await pool.warm_up() == "Fake"
    engine = await start_engine(slow, timeout_s=30)
    try:
        with pytest.raises(EngineFailure, match="did not start a search"):
            await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g1")
    finally:
        await engine.close()


async def test_cancelling_a_search_leaves_the_engine_usable() -> None:
    engine = await start_engine(EngineSpec(tuple(engine_command()), {"Hash": 8}))
    try:
        task = asyncio.ensure_future(engine.think(chess.Board(), chess.engine.Limit(time=5),
                                                  hard_limit_s=10, game="g"))
        await asyncio.sleep(0.2)
        task.cancel()
        await asyncio.wait({task})
        thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g")
        assert thought.move in chess.Board().legal_moves
    finally:
        await engine.close()



def open_engine_transports() -> list[asyncio.base_subprocess.BaseSubprocessTransport]:
    gc.collect()
    return [obj for obj in gc.get_objects()
            if isinstance(obj, asyncio.base_subprocess.BaseSubprocessTransport)
            and not obj.is_closing()]


# Says uciok, then never answers again (the options never confirmed).
MUTE_AFTER_UCI = """import sys
for line in sys.stdin:
    if line.strip() == "uci":
        print("id name Mute\\noption name Hash type spin default 1 min 1 max 64\\nuciok",
              flush=True)
"""


@pytest.mark.parametrize("command,cancel_after_s", [
    *((None, after_s) for after_s in (0.0, 0.02, 0.1, 0.3, 1.0)),
    ((sys.executable, "-c", MUTE_AFTER_UCI), 0.5),  # cancelled while setting options
])
async def test_a_cancelled_start_leaves_no_process_behind(command: tuple[str, ...] | None,
                                                          cancel_after_s: float) -> None:
    """Shutdown cancels a spare engine's start at any point: in the launch, the handshake, the
    options or the priming search. The process goes with it (no zombie, no open pipes)."""
    before = open_engine_transports()
    start = asyncio.ensure_future(start_engine(
        EngineSpec(command or tuple(engine_command()), {"Hash": 8}), prime=True))
    await asyncio.sleep(cancel_after_s)
    start.cancel()
    await asyncio.wait({start})
    if not start.cancelled():  # it was quicker than the cancellation
        await start.result().close()
    leaked = [t for t in open_engine_transports() if t not in before]
    assert not leaked, f"engine processes left running: {[t.get_pid() for t in leaked]}"
