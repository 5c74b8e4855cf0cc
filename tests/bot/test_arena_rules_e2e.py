"""Arenas as lila runs them, end to end: the real bot against the sandbox's arenas, with the
sandbox's clock as the arenas' time on both sides (the test moves it).

The daily bot-game cap leaves arenas alone, a pause after a restart is waited out, a playban
too, restarts before the start spend no join credits, and a bot that crashed mid-arena loses
its pairing by noStart, restarts and plays on."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import chess
import pytest

from bot.ops.config import Config
from sandbox.server import HUMAN_ARENA_SCOPES, SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.bot.e2e_support import (
    BOT,
    FAKE_ENGINE,
    UNBUDGETED,
    UNLIMITED,
    BotRun,
    make_config,
    quiet_logs,
    running_bot,
    wait_for,
)
from tests.bot.test_challenge_rules_e2e import answered
from tests.bot.test_tournaments_e2e import arena_config

BOT_WHITE = chess.WHITE
LONG_ARENA = ArenaSpec(name="Long Arena", clock_limit_s=60, minutes=60, starts_in_s=0)


def arena_bot_config(tmp_path: Path, arena_id: str) -> Config:
    """The bot on the arena, with an engine that answers at once with a random legal move:
    these tests are about lila's arena rules, and a start of the built-in engine (seconds
    of compiled code to load, at each of the bot's starts) tells them nothing."""
    config = make_config(tmp_path, arena_config(tmp_path, arena_id))
    fake = (sys.executable, FAKE_ENGINE, "none", "0")
    return dataclasses.replace(config, engine=dataclasses.replace(config.engine, command=fake))


@contextlib.asynccontextmanager
async def bot_on_arena(server: SandboxServer, config: Config, clock: ManualClock,
                       token: str | None = None) -> AsyncIterator[BotRun]:
    # the request budget has tests of its own: here it would only hold the kibitz lines
    async with running_bot(server, config, token=token, arena_clock=clock.now,
                           timings=UNBUDGETED) as run:
        yield run


def offline_person(server: SandboxServer, arena_id: str) -> None:
    """A second player who is not on the arena's page: never paired, but ranked."""
    server.add_account("sparring", bot=False, scopes=HUMAN_ARENA_SCOPES)
    server.arenas.join(server.account("sparring"), arena_id)


def published(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "state" / "tournaments" / "status.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


async def test_at_the_daily_bot_game_cap_the_arena_goes_on_and_bots_are_declined(
        tmp_path: Path) -> None:
    """lila reads the cap only on challenges (BotLimit.challengeLimitError): a capped bot is
    paired in its arena against bots as before, and keeps declining bot challenges."""
    quiet_logs()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "opponents.json").write_text(
        json.dumps({"bots_capped_until": time.time() + 3600}))
    clock = ManualClock()
    limits = dataclasses.replace(UNLIMITED, bot_games_per_day=1)
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=limits) as server:
        arena_id = server.create_arena(dataclasses.replace(LONG_ARENA, starts_in_s=60))
        robo = await server.start_opponent("robo", bot=True, movetime_s=0.01, seed=2)
        assert await robo.join_arena(arena_id) == 200
        server.add_account("robo2", bot=True)
        arena = server.arena(arena_id)
        config = arena_bot_config(tmp_path, arena_id)
        async with bot_on_arena(server, config, clock):
            await wait_for(lambda: BOT in arena.players)
            challenge = server.lobby.challenges[await server.challenge("robo2", BOT, 180, 2)]
            await wait_for(lambda: answered(challenge) == "later")
            clock.advance(60)
            for played in range(2):
                await wait_for(lambda: len(arena.games) > played)  # noqa: B023
                game = server.game(arena.games[played])
                assert BOT in {p.id for p in game.players.values()}
                await wait_for(lambda: game.plies >= 2)  # noqa: B023
                server.end_game(game.id, "draw")
                if not played:
                    clock.advance(15)  # the next pairing run
            # Both bots are past the sandbox's cap of one bot game a day, and play on.
            assert server.lobby.limiters.bot_games.wait_s(BOT) > 0
            assert not arena.players[BOT].withdrawn


async def test_a_restart_in_the_top_7_waits_out_its_pause_and_rejoins(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The stop withdraws from the running arena; lila pauses a top-7 player (Pause.scala:
    10 s the first time); the restarted bot waits `me.pauseDelay`, then joins again."""
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.tournaments")
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(LONG_ARENA)
        clock.advance(0)
        offline_person(server, arena_id)
        arena = server.arena(arena_id)
        config = arena_bot_config(tmp_path, arena_id)
        async with bot_on_arena(server, config, clock) as first:
            await wait_for(lambda: BOT in arena.players)
        assert arena.players[BOT].withdrawn  # a running arena is left at a stop
        async with bot_on_arena(server, config, clock, first.token):
            await wait_for(lambda: "paused by lila" in caplog.text)
            assert "paused by lila" in str(published(tmp_path))  # on the status page
            clock.advance(11)
            await wait_for(lambda: not arena.players[BOT].withdrawn)
        assert "Your pause is not over yet" not in caplog.text  # no join wasted on it


async def test_a_playban_is_waited_out_and_shown(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.tournaments")
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(LONG_ARENA)
        clock.advance(0)
        offline_person(server, arena_id)
        arena = server.arena(arena_id)
        config = arena_bot_config(tmp_path, arena_id)
        async with bot_on_arena(server, config, clock):
            await wait_for(lambda: BOT in arena.players)
            server.arenas.playban(server.account(BOT), 3)
            assert arena.players[BOT].withdrawn
            clock.advance(1)  # the next look finds us withdrawn and tries to join
            # 2 minutes and 59 s left: lila says 2 (TempBan.remainingMinutes rounds down).
            await wait_for(lambda: "Banned from playing for 2 minutes" in str(
                published(tmp_path)))
            clock.advance(179)
            assert arena.players[BOT].withdrawn
            clock.advance(1)  # the 2 minutes and a margin of 1 since the refusal
            await wait_for(lambda: not arena.players[BOT].withdrawn)
    bans = [r for r in caplog.records if "Banned from playing" in r.getMessage()]
    assert len(bans) == 1 and bans[0].levelno == logging.WARNING


async def test_restarts_before_the_start_spend_no_joins(tmp_path: Path) -> None:
    """An arena made by a user costs 2 of the 8 join credits of an hour
    (TournamentApi.initialJoin): stops and starts keep the one join (a join at each start
    would have spent 2 more credits each time)."""
    quiet_logs()
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(dataclasses.replace(LONG_ARENA, starts_in_s=300),
                                       created_by="someone")
        arena = server.arena(arena_id)
        config = arena_bot_config(tmp_path, arena_id)
        token = server.add_account(BOT, bot=True)
        for _ in range(3):
            (tmp_path / "state" / "tournaments" / "status.json").unlink(missing_ok=True)
            async with bot_on_arena(server, config, clock, token):
                await wait_for(lambda: BOT in arena.players and any(
                    a.get("joined") for a in published(tmp_path)))
            assert BOT in arena.players and not arena.players[BOT].withdrawn
        assert server.arenas.initial_join_credits(BOT) == 2


async def test_a_bot_down_mid_arena_loses_by_no_start_then_rejoins(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """lila pairs a bot on the list whether or not its event stream is open (StartedOrganizer
    fetchWaitingBots): the bot that crashed loses that game by noStart and is withdrawn;
    restarted, it joins again and is paired again."""
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.tournaments")
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(LONG_ARENA)
        clock.advance(0)
        robo = await server.start_opponent("robo", bot=True, movetime_s=0.01, seed=3)
        arena = server.arena(arena_id)
        config = arena_bot_config(tmp_path, arena_id)
        token = server.add_account(BOT, bot=True)
        crashed = asyncio.Event()
        async with bot_on_arena(server, config, clock, token) as first:
            await wait_for(lambda: BOT in arena.players)
            first.task.cancel()  # a crash: no goodbye, no withdrawal
            with contextlib.suppress(asyncio.CancelledError):
                await first.task
            crashed.set()
        assert crashed.is_set() and not arena.players[BOT].withdrawn
        assert await robo.join_arena(arena_id) == 200
        clock.advance(15)  # the next pairing run (every 15 s under 50 players), while down
        lost = server.game(arena.games[-1])
        assert BOT in {p.id for p in lost.players.values()}
        robo.release_moves()
        await wait_for(lambda: lost.plies > 0 or lost.players[BOT_WHITE].id == BOT)
        clock.advance(60)  # past the first-move allowance
        assert (lost.status, arena.players[BOT].withdrawn) == ("noStart", True)
        async with bot_on_arena(server, config, clock, token):
            await wait_for(lambda: not arena.players[BOT].withdrawn)
            clock.advance(15)
            await wait_for(lambda: len(arena.games) >= 2)
            again = server.game(arena.games[-1])
            assert BOT in {p.id for p in again.players.values()}
            await wait_for(lambda: again.plies >= 2)
            server.end_game(again.id, "draw")  # the stop has no game to wait for
