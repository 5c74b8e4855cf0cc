"""ArenaDesk against the sandbox: commands, the kept slot, refusals, the stop."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.challenges.slots import Slots
from bot.lichess.client import Lichess
from bot.lichess.events import Color, GameInfo
from bot.ops.config import ArenaEntry, TournamentsConfig
from bot.tournaments.control import ControlDir, TournamentCommand
from bot.tournaments.desk import ArenaDesk
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.bot.e2e_support import FAST_TIMINGS, wait_for


async def test_join_by_command_keep_a_slot_and_leave_on_request(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        running = server.create_arena(ArenaSpec(name="Hourly", starts_in_s=0))
        clock.advance(0)
        private = server.create_arena(ArenaSpec(password="secret", starts_in_s=600))
        control = ControlDir(tmp_path)
        config = TournamentsConfig(arenas=(ArenaEntry(private, password="wrong"),),
                                   slots=1, poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", control=control)
            with caplog.at_level(logging.INFO, logger="bot.tournaments"):
                task = asyncio.create_task(desk.run())
                try:
                    control.submit(TournamentCommand("join", running))
                    players = server.arena(running).players
                    await wait_for(lambda: "kibitz" in players)
                    await wait_for(lambda: desk.arenas[private].done)
                    # Joined, then looked at again: our rank and score are read.
                    await wait_for(lambda: "rank 1/1" in "".join(desk.status_lines()))
                    playing: list[GameInfo | None] = []
                    slots = Slots(4, desk, playing=lambda: playing, waiting=tuple,
                                  pending=lambda: 0)
                    assert (slots.reserved(), slots.challenge_limit()) == (1, 3)
                    playing.append(_finished("arena1", "started", None))
                    assert (slots.reserved(), slots.challenge_limit()) == (0, 4)
                    assert slots.pauses_matchmaking()
                    assert desk.status_lines()[0].startswith(
                        f"arena Hourly ({running}): rank 1/1, 0 points, 0 games, 5:00 left")
                    control.submit(TournamentCommand("withdraw", running))
                    await wait_for(lambda: players["kibitz"].withdrawn)
                    listed = {a["id"]: a for a in control.status() or []}
                    await wait_for(lambda: {a["id"]: a for a in control.status() or []}[
                        running]["withdrawn"])
                    assert listed[private]["problem"] == "cannot join: Wrong entry code"
                finally:
                    task.cancel()
        refusals = [r for r in caplog.records if "Wrong entry code" in r.getMessage()]
        assert len(refusals) == 1
        assert "kibitz" not in server.arena(private).players


def test_a_bad_request_file_is_dropped_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    control = ControlDir(tmp_path)
    control.requests.mkdir(parents=True)
    (control.requests / "1.json").write_text('{"action": "leave", "id": "AbCd1234"}')
    control.submit(TournamentCommand("join", "AbCd1234", team="fans"))
    with caplog.at_level(logging.WARNING):
        commands = control.take()
    assert commands == [TournamentCommand("join", "AbCd1234", team="fans")]
    assert "a request needs an action (join, withdraw)" in caplog.text
    assert list(control.requests.iterdir()) == []


async def test_a_stop_keeps_arenas_not_started_and_leaves_running_ones(
        tmp_path: Path) -> None:
    """A stop is most often a restart: a withdrawal before the start would take us off the
    list, and the join after the restart would cost lila's join credits again."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        upcoming = server.create_arena(ArenaSpec(starts_in_s=120))
        running = server.create_arena(ArenaSpec(starts_in_s=0))
        clock.advance(0)
        config = TournamentsConfig(arenas=(ArenaEntry(upcoming), ArenaEntry(running)),
                                   poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", clock=clock.now)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: "kibitz" in server.arena(upcoming).players
                               and "kibitz" in server.arena(running).players)
                await wait_for(lambda: all(s.view is not None and s.joined
                                           for s in desk.arenas.values()))
                await desk.stop()
            finally:
                task.cancel()
        assert not server.arena(upcoming).players["kibitz"].withdrawn
        assert not desk.arenas[upcoming].withdrawn
        assert server.arena(running).players["kibitz"].withdrawn


async def test_too_many_joins_waits_the_limit_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """lila's initialJoin refusal (400 "You are joining too many tournaments") is not tried
    again within the hour it counts: each try would only be refused."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        taken = [server.create_arena(ArenaSpec(starts_in_s=600, minutes=120),
                                     created_by="someone") for _ in range(4)]
        for arena_id in taken:
            server.arenas.join(server.account("kibitz"), arena_id)
        wanted = server.create_arena(ArenaSpec(starts_in_s=600, minutes=120),
                                     created_by="someone")
        config = TournamentsConfig(arenas=(ArenaEntry(wanted),), poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", clock=clock.now,
                             control=ControlDir(tmp_path))
            with caplog.at_level(logging.INFO, logger="bot.tournaments"):
                task = asyncio.create_task(desk.run())
                try:
                    await wait_for(lambda: desk.arenas[wanted].problem is not None)
                    assert "You are joining too many tournaments" in str(
                        desk.arenas[wanted].problem)
                    asked = server.arenas.join_requests("kibitz")
                    # Within the joinOrResume window (10 minutes), which counts every try.
                    for step_s in (60.0, 500.0):
                        rounds = desk.rounds
                        clock.advance(step_s)
                        await wait_for(lambda: desk.rounds >= rounds + 2)  # noqa: B023
                        assert server.arenas.join_requests("kibitz") == asked
                    assert not desk.arenas[wanted].done
                    clock.advance(3600 - 560)  # the hour since the refusal is over
                    await wait_for(lambda: "kibitz" in server.arena(wanted).players)
                finally:
                    task.cancel()
        refusals = [r for r in caplog.records if "too many" in r.getMessage()]
        assert len(refusals) == 1


def _finished(game_id: str, status: str, winner: Color | None) -> GameInfo:
    return GameInfo(game_id=game_id, full_id=game_id + "abcd", color="white",
                    variant="standard", speed="bullet", rated=True, source="arena",
                    status=status, opponent_id="robo", opponent_name="robo", winner=winner,
                    tournament_id="AbCd1234")


async def test_two_no_start_losses_in_a_row_stop_the_joins(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """PlaybanApi.noStart counts each towards a playban: after two in a row the bot joins
    no more arenas, says why, and a join command lets it join again."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        arena_id = server.create_arena(ArenaSpec(starts_in_s=600))
        config = TournamentsConfig(arenas=(ArenaEntry(arena_id),), poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", clock=clock.now)
            desk.on_game_finish(_finished("game0001", "noStart", "black"))
            desk.on_game_finish(_finished("game0002", "mate", "white"))
            desk.on_game_finish(_finished("game0003", "noStart", "black"))
            assert desk.joins_stopped is None  # not in a row
            desk.on_game_finish(_finished("game0004", "noStart", "black"))
            assert desk.joins_stopped is not None
            with caplog.at_level(logging.INFO, logger="bot.tournaments"):
                task = asyncio.create_task(desk.run())
                try:
                    await wait_for(lambda: desk.arenas[arena_id].problem is not None)
                    assert "kibitz" not in server.arena(arena_id).players
                    assert any("noStart" in line for line in desk.status_lines())
                    desk.apply(TournamentCommand("join", arena_id))
                    clock.advance(1)
                    await wait_for(lambda: "kibitz" in server.arena(arena_id).players)
                finally:
                    task.cancel()
