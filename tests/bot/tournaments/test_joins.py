"""Joins that cost nothing: refusals foreseen in the tournament JSON, the pause waited for,
the pairings' close, the polls' pace, and the join credits kept across restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.lichess.client import Lichess
from bot.lichess.events import GameInfo
from bot.ops.config import ArenaEntry, TournamentsConfig
from bot.tournaments.control import ControlDir, TournamentCommand
from bot.tournaments.credits import CHARGES_FILE, JoinLedger, window_end
from bot.tournaments.desk import FAR_POLL_MAX_S, OVERDUE_BACKOFF_MAX_S, ArenaDesk, ArenaState
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.bot.e2e_support import FAST_TIMINGS, wait_for

USER = "someone"  # an arena made by a user: a first join costs 2 credits


def _desk(config: TournamentsConfig, client: Lichess, clock: ManualClock,
          tmp_path: Path) -> ArenaDesk:
    # The control directory caps each wait of the loop at a second of real time, and holds
    # the ledger of join credits.
    control = ControlDir(tmp_path)
    return ArenaDesk(config, client, "kibitz", control=control, clock=clock.now,
                     ledger=JoinLedger(control.root / CHARGES_FILE, wall=clock.now))


async def _advance(desk: ArenaDesk, clock: ManualClock, step_s: float) -> None:
    rounds = desk.rounds
    clock.advance(step_s)
    await wait_for(lambda: desk.rounds >= rounds + 2)


async def test_foreseeable_refusals_cost_no_credit_across_restarts(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An arena that refuses bots, a private one with no password configured and a team
    battle without our team are never joined: lila would charge before refusing
    (TournamentApi.join). A battle with one team of ours is joined with it."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        server.add_team_member("fans", "kibitz")
        nobots = server.create_arena(ArenaSpec(allow_bots=False, starts_in_s=300),
                                     created_by=USER)
        private = server.create_arena(ArenaSpec(password="secret", starts_in_s=300),
                                      created_by=USER)
        others = server.create_arena(ArenaSpec(teams=frozenset({"chess", "club"}),
                                               starts_in_s=300), created_by=USER)
        ours = server.create_arena(ArenaSpec(teams=frozenset({"fans", "club"}),
                                             starts_in_s=300), created_by=USER)
        config = TournamentsConfig(arenas=tuple(ArenaEntry(a) for a in (
            nobots, private, others, ours)), poll_interval_s=1)
        with caplog.at_level(logging.INFO, logger="bot.tournaments"):
            for _ in range(3):  # a start and two restarts
                async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
                    desk = _desk(config, client, clock, tmp_path)
                    task = asyncio.create_task(desk.run())
                    try:
                        await wait_for(lambda: all(
                            s.problem is not None or s.joined
                            for s in desk.arenas.values()))  # noqa: B023
                        await desk.stop()
                    finally:
                        task.cancel()
        assert server.arena(ours).players["kibitz"].team == "fans"
        for arena_id in (nobots, private, others):
            assert "kibitz" not in server.arena(arena_id).players
        # One first join, to the battle of our team; nothing else reached lila's join.
        assert server.arenas.initial_join_credits("kibitz") == 2
        assert server.arenas.join_requests("kibitz") == 1
        problems = {a: desk.arenas[a].problem or "" for a in (nobots, private, others)}
        assert "Bot players are not allowed" in problems[nobots]
        assert "no password" in problems[private]
        assert "chess" not in problems[others] and "ours there: none" in problems[others]
        status = {a["id"]: a for a in ControlDir(tmp_path).status() or []}
        assert "Bot players are not allowed" in status[nobots]["problem"]
        # Logged once per start, not at each poll.
        logged = [r for r in caplog.records if "Bot players are not allowed" in r.getMessage()]
        assert len(logged) == 3


async def test_a_first_join_to_a_running_arena_waits_for_the_pause(tmp_path: Path) -> None:
    """Two earlier pauses, then a withdrawal from A (rank 1): lila pauses us for 80 s in a
    10+0 arena but shows it only in arenas we are on the list of. B is joined once the
    pause can be over, with one join charged, and never "too many"."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        spec = ArenaSpec(clock_limit_s=600, minutes=120, starts_in_s=0)
        first = server.create_arena(spec)
        second = server.create_arena(spec, created_by=USER)
        clock.advance(0)
        kibitz = server.account("kibitz")
        server.arenas.join(kibitz, first)
        server.arenas.pauses.add("kibitz")
        server.arenas.pauses.add("kibitz")
        clock.advance(60)  # the second pause (40 s) is over; lila remembers both
        credits = server.arenas.initial_join_credits("kibitz")
        requests = server.arenas.join_requests("kibitz")
        config = TournamentsConfig(arenas=(ArenaEntry(first),), poll_interval_s=5)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = _desk(config, client, clock, tmp_path)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: desk.arenas[first].joined)
                desk.apply(TournamentCommand("withdraw", first))
                await wait_for(lambda: server.arena(first).players["kibitz"].withdrawn)
                assert server.arenas.pauses.remaining_s("kibitz", 600) == 80
                # The arena left still lists us and shows the pause: it replaces the bound.
                # The sandbox marks the withdrawal before the desk reads lila's answer; the
                # desk then sets the bound (paused_until) and replaces it with the pause shown
                # (pause_bound False, as it also is before any withdrawal).
                await wait_for(lambda: desk.paused_until is not None and not desk.pause_bound)
                assert desk.paused_until == clock.now() + 80 + 1
                desk.apply(TournamentCommand("join", second))
                await wait_for(lambda: desk.arenas.get(second) is not None
                               and desk.arenas[second].problem is not None)
                for _ in range(30):
                    if "kibitz" in server.arena(second).players:
                        break
                    await _advance(desk, clock, 10)
            finally:
                task.cancel()
        assert "kibitz" in server.arena(second).players
        assert server.arenas.initial_join_credits("kibitz") - credits == 2
        assert server.arenas.join_requests("kibitz") - requests == 1


async def test_no_join_once_the_pairings_close_and_no_withdrawal_from_such_an_arena(
        tmp_path: Path) -> None:
    """Tournament.pairingsClosed: a join would pair nobody, a withdrawal only adds a pause."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        ours = server.create_arena(ArenaSpec(minutes=5, starts_in_s=0))
        closing = server.create_arena(ArenaSpec(minutes=5, starts_in_s=0))
        clock.advance(0)
        server.arenas.join(server.account("kibitz"), ours)
        clock.advance(5 * 60 - 20)  # 20 s left: the pairings closed 10 s ago
        requests = server.arenas.join_requests("kibitz")
        config = TournamentsConfig(arenas=(ArenaEntry(ours), ArenaEntry(closing)),
                                   poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = _desk(config, client, clock, tmp_path)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: desk.arenas[closing].done
                               and desk.arenas[ours].view is not None)
                await desk.stop()
            finally:
                task.cancel()
        assert "pairings have closed" in str(desk.arenas[closing].problem)
        assert "kibitz" not in server.arena(closing).players
        assert server.arenas.join_requests("kibitz") == requests
        assert not server.arena(ours).players["kibitz"].withdrawn


class _Replies:
    """The desk's `Commands`, answering `GET /api/tournament/{id}` from a function of the
    call count, with no connection."""

    def __init__(self, reply: Callable[[int], dict[str, Any]]) -> None:
        self.reply = reply
        self.shows = 0

    async def request(self, method: str, path: str, **_: Any) -> Any:
        assert method == "GET", f"{method} {path}: only the tournament is read here"
        self.shows += 1
        return self.reply(self.shows)


async def test_polls_follow_the_time_to_start_and_back_off_past_the_end() -> None:
    clock = ManualClock()
    far = _Replies(lambda _: {"id": "AbCd1234", "secondsToStart": 3 * 86400,
                              "createdBy": "lichess"})
    desk = ArenaDesk(TournamentsConfig(arenas=(ArenaEntry("AbCd1234"),), poll_interval_s=15),
                     far, "kibitz", clock=clock.now)
    state = desk.arenas["AbCd1234"]
    await desk._look(state)
    assert state.next_look - clock.now() == FAR_POLL_MAX_S  # three looks an hour
    # Past the end, lila still shows the arena running until its finisher runs.
    overdue = _Replies(lambda _: {"id": "AbCd1234", "isStarted": True, "secondsToFinish": 0,
                                  "pairingsClosed": True, "clock": {"limit": 60},
                                  "me": {"rank": 1}})
    desk = ArenaDesk(TournamentsConfig(arenas=(ArenaEntry("AbCd1234"),), poll_interval_s=15),
                     overdue, "kibitz", clock=clock.now)
    state = desk.arenas["AbCd1234"]
    gaps = []
    for _ in range(8):
        await desk._look(state)
        gaps.append(state.next_look - clock.now())
        clock.advance(gaps[-1])
    assert gaps == [1, 2, 4, 8, 16, 32, OVERDUE_BACKOFF_MAX_S, OVERDUE_BACKOFF_MAX_S]


async def test_too_many_retries_when_the_window_of_our_first_charge_closes(
        tmp_path: Path) -> None:
    """lila's window opens at the first charge: four joins of users' arenas at 0 s (8
    credits), a fifth refused at 600 s is tried again at 3600 s, not an hour after the
    refusal; the charges are in the state directory, for the next start."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        spec = ArenaSpec(starts_in_s=7200, minutes=120)
        taken = [server.create_arena(spec, created_by=USER) for _ in range(4)]
        wanted = server.create_arena(spec, created_by=USER)
        config = TournamentsConfig(arenas=tuple(ArenaEntry(a) for a in taken),
                                   poll_interval_s=1, join_before_s=7200)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = _desk(config, client, clock, tmp_path)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: all(s.joined for s in desk.arenas.values()))
                charges = json.loads((tmp_path / "tournaments" / CHARGES_FILE).read_text())
                assert [c for _, c in charges] == [2, 2, 2, 2]
                clock.advance(600)
                desk.apply(TournamentCommand("join", wanted))
                await wait_for(lambda: desk.arenas[wanted].problem is not None)
                assert "too many" in str(desk.arenas[wanted].problem)
                await _advance(desk, clock, 3600 - 600 - 10)
                assert "kibitz" not in server.arena(wanted).players
                await _advance(desk, clock, 15)
                await wait_for(lambda: "kibitz" in server.arena(wanted).players)
            finally:
                task.cancel()
        # A new start reads the charges back.
        assert len(JoinLedger(tmp_path / "tournaments" / CHARGES_FILE).charges) == 5


async def test_no_start_losses_leave_the_other_running_arenas_and_a_stop_says_what_stays(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """After two noStart losses lila would go on pairing us in our other running arenas
    (StartedOrganizer pairs a bot on the list, online or not): we leave them. A stop names
    the arenas kept on their list and the command that leaves them."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        lost = server.create_arena(ArenaSpec(minutes=60, starts_in_s=0))
        other = server.create_arena(ArenaSpec(minutes=60, starts_in_s=0))
        later = server.create_arena(ArenaSpec(minutes=60, starts_in_s=300))
        clock.advance(0)
        config = TournamentsConfig(arenas=tuple(ArenaEntry(a) for a in (lost, other, later)),
                                   poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = _desk(config, client, clock, tmp_path)
            with caplog.at_level(logging.INFO, logger="bot.tournaments"):
                task = asyncio.create_task(desk.run())
                try:
                    await wait_for(lambda: all(s.joined and s.view is not None
                                               for s in desk.arenas.values()))
                    for game_id in ("game0001", "game0002"):
                        desk.on_game_finish(_no_start(game_id, lost))
                    # The desk's own record: once it has read lila's answer (the sandbox
                    # marks the withdrawal before), the stop does not withdraw again.
                    await wait_for(lambda: desk.arenas[other].withdrawn)
                    assert server.arena(other).players["kibitz"].withdrawn
                    await desk.stop()
                finally:
                    task.cancel()
        assert "kibitz" in server.arena(later).players  # not started: kept
        kept = [r.getMessage() for r in caplog.records if "kept on its list" in r.getMessage()]
        assert len(kept) == 1 and f"kibitz tournament withdraw {later}" in kept[0]


def _no_start(game_id: str, arena_id: str) -> GameInfo:
    return GameInfo(game_id=game_id, full_id=game_id + "abcd", color="white",
                    variant="standard", speed="bullet", rated=True, source="arena",
                    status="noStart", opponent_id="robo", opponent_name="robo",
                    winner="black", tournament_id=arena_id)


def test_window_end_follows_lilas_windows() -> None:
    """RateLimit: a window opens at the first charge after the last one closed."""
    assert window_end([], 3600) is None
    assert window_end([(100.0, 2), (200.0, 2)], 3600) == 3700
    assert window_end([(100.0, 2), (3800.0, 1), (3900.0, 2)], 3600) == 7400


async def test_a_refusal_after_the_charge_is_recorded_one_before_it_is_not(
        tmp_path: Path) -> None:
    """A wrong entry code is refused after initialJoin charged (TournamentApi.join); an
    arena that is over is refused before it."""
    clock = ManualClock()
    async with SandboxServer(clock=clock) as server:
        token = server.add_account("kibitz", bot=True)
        private = server.create_arena(ArenaSpec(password="secret", starts_in_s=60),
                                      created_by=USER)
        over = server.create_arena(ArenaSpec(minutes=1, starts_in_s=0))
        clock.advance(0)
        clock.advance(61)
        config = TournamentsConfig(arenas=(ArenaEntry(private, password="wrong"),),
                                   poll_interval_s=1)
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            desk = _desk(config, client, clock, tmp_path)
            task = asyncio.create_task(desk.run())
            try:
                await wait_for(lambda: desk.arenas[private].done)
                assert [c for _, c in desk.ledger.charges] == [2]
                state = desk.arenas[private]
                assert state.view is not None
                finished = dataclasses.replace(state.view, id=over)
                await desk._join(ArenaState(ArenaEntry(over), "config"), finished)
            finally:
                task.cancel()
        assert [c for _, c in desk.ledger.charges] == [2]
        assert server.arenas.initial_join_credits("kibitz") == 2
