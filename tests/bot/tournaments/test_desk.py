"""ArenaDesk against the sandbox: commands, the kept slot, the daily cap, refusals."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.lichess.client import Lichess
from bot.ops.config import ArenaEntry, TournamentsConfig
from bot.tournaments.control import ControlDir, TournamentCommand
from bot.tournaments.desk import ArenaDesk
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.bot.e2e_support import FAST_TIMINGS, wait_for


async def test_join_by_command_keep_a_slot_leave_at_the_cap_and_on_request(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        running = server.create_arena(ArenaSpec(name="Hourly", starts_in_s=0))
        clock.advance(0)
        private = server.create_arena(ArenaSpec(password="secret", starts_in_s=600))
        capped = False
        control = ControlDir(tmp_path)
        config = TournamentsConfig(arenas=(ArenaEntry(private, password="wrong"),),
                                   slots=1, poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", bot_day_capped=lambda: capped,
                             control=control)
            with caplog.at_level(logging.INFO, logger="bot.tournaments"):
                task = asyncio.create_task(desk.run())
                try:
                    control.submit(TournamentCommand("join", running))
                    players = server.arena(running).players
                    await wait_for(lambda: "kibitz" in players)
                    await wait_for(lambda: desk.arenas[private].done)
                    # Joined, then looked at again: our rank and score are read.
                    await wait_for(lambda: "rank 1/1" in "".join(desk.status_lines()))
                    assert (desk.reserved_slots(0), desk.reserved_slots(1)) == (1, 0)
                    assert desk.pauses_matchmaking()
                    assert desk.status_lines()[0].startswith(
                        f"arena Hourly ({running}): rank 1/1, 0 points, 0 games, 5:00 left")
                    capped = True
                    await wait_for(lambda: not desk.running())
                    assert players["kibitz"].withdrawn and desk.reserved_slots(0) == 0
                    capped = False
                    await wait_for(lambda: not players["kibitz"].withdrawn)
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


async def test_a_stopping_bot_withdraws_from_its_arenas(tmp_path: Path) -> None:
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        upcoming = server.create_arena(ArenaSpec(starts_in_s=120))
        config = TournamentsConfig(arenas=(ArenaEntry(upcoming),), poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = ArenaDesk(config, client, "kibitz", bot_day_capped=lambda: False)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: "kibitz" in server.arena(upcoming).players)
                await desk.stop()
            finally:
                task.cancel()
        # Before the start a withdrawal takes the player off the list (lila selfPause).
        assert "kibitz" not in server.arena(upcoming).players
        assert desk.arenas[upcoming].withdrawn
