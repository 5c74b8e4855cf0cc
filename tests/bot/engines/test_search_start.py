"""A search whose start is cut short (its game ended while the engine was getting ready)
leaves no engine searching for nobody."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from bot.engines.pool import EngineSpec, start_engine
from tests.bot.e2e_support import FAKE_ENGINE, wait_for
from tests.bot.recording_engine import conversation

RECORDING_ENGINE = str(Path(__file__).parents[1] / "recording_engine.py")
FAST = chess.engine.Limit(time=0.05)


def _told(log: Path, *commands: str) -> bool:
    """The engine was sent these commands, in this order (others between)."""
    sent = [line[2:].split()[0] for line in log.read_text().splitlines()
            if line.startswith("> ") and line[2:].split()]
    at = 0
    for command in sent:
        if at < len(commands) and command == commands[at]:
            at += 1
    return at == len(commands)


async def test_a_search_cancelled_while_it_starts_is_stopped_and_its_bestmove_read(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The game's first search waits for the engine's `readyok` (after `ucinewgame`) when
    the game ends: python-chess still sends `go` once `readyok` comes. That search is
    stopped and its `bestmove` read, with no error."""
    logs = tmp_path / "engine"
    # no readyok until the gate opens: the cancellation lands while the start waits for it,
    # however slow the machine (a readyok some time late may beat a cancellation held up)
    gate = tmp_path / "ready"
    spec = EngineSpec((sys.executable, RECORDING_ENGINE, str(logs),
                       sys.executable, FAKE_ENGINE, "heldready", "0", str(gate)), {"Hash": 8})
    with caplog.at_level(logging.ERROR):
        engine = await start_engine(spec, timeout_s=30)
        (log,) = logs.glob("*.log")
        try:
            think = asyncio.create_task(
                engine.think(chess.Board(), FAST, hard_limit_s=5, game="g1"))
            await wait_for(lambda: _told(log, "ucinewgame", "isready"))
            think.cancel()
            with pytest.raises(asyncio.CancelledError):
                await think
            assert not conversation(log).searches  # cancelled before any `go`
            gate.touch()
            await wait_for(lambda: any(s.answered for s in conversation(log).searches))
            # the engine is still in step: a next search works
            thought = await engine.think(chess.Board(), FAST, hard_limit_s=5, game="g1")
            assert chess.Board().is_legal(thought.move)
        finally:
            await engine.close()
    talk = conversation(log)
    assert [s.answered for s in talk.searches] == [True, True]
    assert talk.searches[0].stopped  # the abandoned search was told to stop
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
