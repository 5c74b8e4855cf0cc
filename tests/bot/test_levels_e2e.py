"""The level follows the opponent, end to end on the sandbox: the bot plays the people rated
1,200 and 2,000 (casual), the person rated 1,600 (rated) and a bot (casual) at once, under
three settings of `strength`, and each game's level is read from what its engine received
(tests/bot/level_engine.py logs every line, one file per process)."""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path
from types import MappingProxyType

import chess
import pytest

from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    UNBUDGETED,
    UNLIMITED,
    make_config,
    quiet_logs,
    running_bot,
    wait_for,
)

LEVEL_ENGINE = str(Path(__file__).with_name("level_engine.py"))
DECLARED = ("UCI_LimitStrength", "UCI_Elo:500:3200", "UCI_Opponent", "UCI_RatingAdv")
# opponent: (rating, bot, rated)
OPPONENTS = {"human1200": (1200, False, False), "human2000": (2000, False, False),
             "human1600": (1600, False, True), "somebot": (2400, True, False)}
OPPONENT_OPTION = "setoption name UCI_Opponent value "
GREETING = "I play you at {strength}"

# Each setting, and the UCI_Elo each opponent's game must get (None: full strength). The
# games are blitz (3+2): the default offset is -300.
SETTINGS = {
    "default": ("{}", {"human1200": 900, "human2000": 1700, "human1600": None, "somebot": None}),
    "relative, clamped": (
        "{rules: [{strength: opponent + 100, rated: false, min: 1100, max: 1500}]}",
        {"human1200": 1100, "human2000": 1500, "human1600": None, "somebot": 1500}),
    "fixed for people": (
        "{rules: [{strength: 1800, bot: false}]}",
        {"human1200": 1800, "human2000": 1800, "human1600": 1800, "somebot": None}),
}


def engine_logs(log_dir: Path) -> dict[str, list[str]]:
    """Each game's engine log by its opponent's name (its UCI_Opponent line), once the engine
    has been asked to search after it. A spare engine's log names nobody (python-chess sends
    the option's declared default, `<empty>`, with its first ucinewgame)."""
    logs = {}
    for path in log_dir.glob("*.log"):
        lines = path.read_text().splitlines()
        told = [i for i, line in enumerate(lines) if line.startswith(OPPONENT_OPTION)
                and len(line.removeprefix(OPPONENT_OPTION).split()) == 4]
        if told and any(line.startswith("go") for line in lines[told[-1]:]):
            logs[lines[told[-1]].split()[-1]] = lines
    return logs


def greeted(server: SandboxServer) -> dict[str, str]:
    """The bot's greeting in each game, by the opponent's name."""
    found = {}
    for record in server.game_records():
        opponent = record.black if record.white.lower() == BOT else record.white
        lines = [line.text for line in record.chat
                 if line.username.lower() == BOT and line.text.startswith("I play you")]
        if lines:
            found[opponent] = lines[0]
    return found


def rating_advantages(server: SandboxServer) -> dict[str, int]:
    """Our rating minus the opponent's as each game started (gameFull shows the ratings
    before the game: a rated game that has ended since moved ours), by the opponent's name."""
    found = {}
    for game in server.lobby.games.values():
        names = {color: player.username for color, player in game.players.items()}
        if BOT not in (name.lower() for name in names.values()):
            continue
        ours = chess.WHITE if names[chess.WHITE].lower() == BOT else chess.BLACK
        found[names[not ours]] = game.ratings_before[ours] - game.ratings_before[not ours]
    return found


def level_received(lines: list[str]) -> int | None:
    """The UCI_Elo the engine was set to play at, None when it was left at full strength."""
    limited = [line.split()[-1] for line in lines
               if line.startswith("setoption name UCI_LimitStrength value ")]
    elo = [int(line.split()[-1]) for line in lines
           if line.startswith("setoption name UCI_Elo value ")]
    if limited[-1:] != ["true"]:
        assert not elo, lines  # never a UCI_Elo at full strength
        return None
    return elo[-1]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
async def test_each_game_plays_at_the_level_of_its_rules(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, setting: str) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.game.game")
    strength, expected = SETTINGS[setting]
    log_dir = tmp_path / "engine-logs"
    log_dir.mkdir()
    config = make_config(tmp_path, strength=strength)
    config = dataclasses.replace(
        config, chat=dataclasses.replace(config.chat, greeting_start=GREETING))
    config = dataclasses.replace(
        config, engine=dataclasses.replace(
            config.engine, command=(sys.executable, LEVEL_ENGINE, str(log_dir), *DECLARED),
            options=MappingProxyType({})),
        game=dataclasses.replace(config.game, shutdown_grace_s=0.0))
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server, \
            running_bot(server, config, timings=UNBUDGETED) as run:
        for name, (rating, bot, rated) in OPPONENTS.items():
            await server.start_opponent(name, bot=bot, rating=rating, movetime_s=0.02, seed=1,
                                        challenge=ChallengeSpec(BOT, 180, 2, rated=rated,
                                                                repeat=False))
        await wait_for(lambda: set(engine_logs(log_dir)) == set(OPPONENTS))
        await wait_for(lambda: set(greeted(server)) == set(OPPONENTS))
        logs = engine_logs(log_dir)
        greetings = greeted(server)
        advantages = rating_advantages(server)
        await run.finish()

    assert {name: level_received(lines) for name, lines in logs.items()} == expected
    kinds = {name: "computer" if bot else "human" for name, (_, bot, _) in OPPONENTS.items()}
    for name, (rating, bot, _) in OPPONENTS.items():
        title = "BOT" if bot else "none"
        assert f"{OPPONENT_OPTION}{title} {rating} {kinds[name]} {name}" in logs[name]
        assert f"setoption name UCI_RatingAdv value {advantages[name]}" in logs[name]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for name, elo in expected.items():
        level = "full strength" if elo is None else f"Elo {elo}"
        assert f"level: {level} against {name} " in logged
        assert greetings[name] == GREETING.format(strength=level)
