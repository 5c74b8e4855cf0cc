"""People of several ratings on the sandbox, played by its sparring engine at their strength
(sandbox/strength.py)."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import chess.engine
import pytest

from sandbox.cli import SandboxOptions, add_arguments
from sandbox.server import SandboxServer
from sandbox.strength import nodes_for, strength_for
from tests.sandbox.conftest import Duel, eventually
from tests.sandbox.spec import Stream

STUB = str(Path(__file__).with_name("uci_stub.py"))
# Stockfish's own range (its UCI_Elo floor is 1350).
STOCKFISH_ELO = {
    "UCI_LimitStrength": chess.engine.Option("UCI_LimitStrength", "check", False, None, None,
                                             []),
    "UCI_Elo": chess.engine.Option("UCI_Elo", "spin", 1350, 1350, 2850, []),
}


def stub(log: Path, *elo_range: int) -> list[str]:
    extra = ["--elo", *map(str, elo_range)] if elo_range else []
    return [sys.executable, STUB, str(log), *extra]


def test_an_engine_is_set_to_the_rating_within_its_range() -> None:
    at_1600 = strength_for(1600, STOCKFISH_ELO)
    assert (at_1600.options, at_1600.nodes) == ({"UCI_LimitStrength": True, "UCI_Elo": 1600},
                                                None)
    # Below the floor: the floor, and a node limit to go weaker still.
    at_1200 = strength_for(1200, STOCKFISH_ELO)
    assert (at_1200.options, at_1200.nodes) == ({"UCI_LimitStrength": True, "UCI_Elo": 1350},
                                                nodes_for(1200))
    assert strength_for(3200, STOCKFISH_ELO).options["UCI_Elo"] == 2850
    # An engine that declares no strength option gets a node limit alone.
    bare = strength_for(1200, {})
    assert (bare.options, bare.nodes) == ({}, nodes_for(1200))
    assert nodes_for(1200) < nodes_for(1600) < nodes_for(2000)


async def reply_to(duel: Duel, stream: Stream, game_id: str, uci: str) -> str:
    """bot1 plays `uci`; the opponent's answer."""
    await duel.bot.post(f"/api/bot/game/{game_id}/move/{uci}")
    state = await stream.until("gameState")
    while len(state["moves"].split()) < 2:
        state = await stream.until("gameState")
    return str(state["moves"].split()[1])


async def test_a_game_against_the_1200_person(sandbox: SandboxServer, duel: Duel,
                                              tmp_path: Path) -> None:
    log = tmp_path / "uci.log"
    person = await sandbox.start_opponent("human1200", engine=stub(log, 1000, 3000),
                                          rating=1200, movetime_s=None)
    # Read back from the engine: what python-chess set, and what the engine received.
    assert person.engine_config() == {"UCI_LimitStrength": True, "UCI_Elo": 1200}
    await eventually(lambda: "setoption name UCI_Elo value 1200" in log.read_text().splitlines())
    reply = await duel.bot.post("/api/challenge/human1200", data={
        "clock.limit": "300", "clock.increment": "0", "color": "white"})
    assert reply.status == 200, reply.text
    game_id = await sandbox.wait_for_game("human1200")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        full = await stream.next()
        # lila BotJsonView.playerJson: an untitled person's title is null; an established
        # rating has no `provisional`.
        assert full["black"] == {"id": "human1200", "name": "human1200", "title": None,
                                 "rating": 1200}
        assert full["rated"] is False
        assert await reply_to(duel, stream, game_id, "e2e4") == "a7a5"
    assert "go " in log.read_text() and "nodes" not in log.read_text()


async def test_an_engine_without_a_strength_option_gets_a_node_limit(
        sandbox: SandboxServer, duel: Duel, tmp_path: Path) -> None:
    log = tmp_path / "uci.log"
    person = await sandbox.start_opponent("human1600", engine=stub(log), rating=1600,
                                          movetime_s=None)
    assert person.engine_config() == {}
    assert person.strength is not None and person.strength.nodes == nodes_for(1600)
    await duel.bot.post("/api/challenge/human1600", data={
        "clock.limit": "300", "clock.increment": "0", "color": "white"})
    game_id = await sandbox.wait_for_game("human1600")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        assert (await stream.next())["black"]["rating"] == 1600
        await reply_to(duel, stream, game_id, "d2d4")
    await eventually(lambda: f"nodes {nodes_for(1600)}" in log.read_text())


STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")


@pytest.mark.skipif(STOCKFISH is None, reason="Stockfish is not installed")
async def test_stockfish_plays_1200_at_its_floor_and_a_node_limit(
        sandbox: SandboxServer) -> None:
    assert STOCKFISH is not None
    person = await sandbox.start_opponent("human1200", engine=[STOCKFISH], rating=1200)
    assert person.engine_config()["UCI_Elo"] == 1350
    assert person.engine_config()["UCI_LimitStrength"] is True
    assert person.strength is not None and person.strength.nodes == nodes_for(1200)
    assert sandbox.account("human1200").rating("blitz") == 1200


def test_the_command_line_adds_people_of_several_ratings() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert SandboxOptions.from_args(parser.parse_args(["--humans"])).humans == (
        1200, 1600, 2000)
    assert SandboxOptions.from_args(parser.parse_args(["--humans", "1500"])).humans == (1500,)
    assert SandboxOptions.from_args(parser.parse_args([])).humans == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["--humans", "12OO"])
    with pytest.raises(ValueError, match="rating 9000"):
        SandboxServer().lobby.accounts.add("too_strong", bot=False, rating=9000)
