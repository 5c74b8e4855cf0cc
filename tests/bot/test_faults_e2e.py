"""Faults on the sandbox: dropped and silent streams, 429 on moves, 5xx bursts, a slow server.
Every game still finishes, every move is legal, nothing is played twice."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.game.game import Game
from sandbox.opponent import ChallengeSpec
from sandbox.server import GameRecord, SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAST_TIMINGS,
    GUARD_S,
    assert_legal,
    bot_games,
    make_config,
    quiet_logs,
    running_bot,
    strong_opponent,
    wait_for,
)


async def plies(server: SandboxServer, game_id: str, count: int) -> bool:
    """Wait for the game to reach `count` plies; False if it ended first."""
    async with asyncio.timeout(GUARD_S):
        while len(server.game_record(game_id).moves) < count:
            if server.game_record(game_id).finished:
                return False
            await asyncio.sleep(0.01)
    return True


def assert_won(record: GameRecord) -> None:
    assert_legal(record)
    bot_side = "white" if record.white.lower() == BOT else "black"
    assert record.status == "mate", record.status
    assert record.winner == bot_side


async def start_games(server: SandboxServer, count: int) -> list[str]:
    for index in range(count):
        await server.start_opponent(f"rival{index}", seed=index,
                                    challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
    return await bot_games(server, count)


async def test_dropped_and_silent_streams_mid_game(tmp_path: Path) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path)) as run:
            first, second = await start_games(server, 2)
            assert await plies(server, first, 6)
            assert server.drop_streams("event", BOT) == 1
            assert server.drop_streams("game", BOT) >= 1
            assert await plies(server, first, 10)
            # the moves show the game streams are back; the event stream may still be in the
            # bot's reconnect pause on a busy machine
            await wait_for(lambda: server.open_streams("event", BOT) == 1, GUARD_S)
            assert server.silence_streams("game", BOT) >= 1
            assert server.silence_streams("event", BOT) == 1
            records = [await server.wait_for_game_end(g, 60) for g in (first, second)]
        assert run.task.result() == 0
    for record in records:
        assert_won(record)
    assert run.metrics.rejected_moves == 0
    finished = [outcome.game_id for outcome in run.metrics.games]
    assert sorted(finished) == sorted([first, second])  # each game followed once


async def test_429_on_one_games_moves_does_not_stall_the_other(tmp_path: Path) -> None:
    quiet_logs()
    # Far longer than the other game needs for two plies even on a machine so busy that
    # engines start slowly (10 s ran out there once): the pause is the test's only clock.
    timings = dataclasses.replace(FAST_TIMINGS, rate_limit_pause_s=30.0,
                                  move_retry_s=30.0)
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path), timings=timings) as run:
            # The game that meets the 429 must outlast it: an engine rival, not a random one.
            await server.start_opponent("rival0", engine=strong_opponent(), movetime_s=0.05,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (first,) = await bot_games(server, 1, GUARD_S)
            await server.start_opponent("rival1", seed=1,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (second,) = [g for g in await bot_games(server, 2, GUARD_S) if g != first]
            assert await plies(server, first, 4)
            server.rate_limit(f"/api/bot/game/{first}/move/*", html=True, count=1)
            # The first game's next move hits the 429 and waits 30 s ...
            await wait_for(lambda: server.lobby.replies[(BOT, 429)] == 1)
            blocked_at = len(server.game_record(first).moves)
            progress_from = len(server.game_record(second).moves)
            # ... while the second game keeps moving (or has already won).
            await wait_for(lambda: server.game_record(second).finished
                           or len(server.game_record(second).moves) > progress_from + 2)
            assert len(server.game_record(first).moves) == blocked_at
            assert not server.game_record(first).finished
            # After the pause the first game moves again.
            assert await plies(server, first, blocked_at + 2)
            server.end_game(first, "draw")
            records = [await server.wait_for_game_end(g, 60) for g in (first, second)]
        assert run.task.result() == 0
    assert_legal(records[0])
    assert_won(records[1])


async def test_5xx_bursts_and_a_slow_server(tmp_path: Path) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path)) as run:
            first, second = await start_games(server, 2)
            assert await plies(server, first, 4)
            server.fail(502, "/api/bot/game/*/move/*", count=3)
            server.fail(503, "/api/stream/event", count=2)
            server.fail(500, "/api/bot/game/stream/*", count=2)
            server.drop_streams("event", BOT)
            server.drop_streams("game", BOT)
            await plies(server, first, 8)
            server.delay(0.4, "/api/bot/*")
            # Moves, chat and streams all answer slowly for a few of the bot's moves.
            await plies(server, first, len(server.game_record(first).moves) + 4)
            server.clear_faults()
            records = [await server.wait_for_game_end(g, 60) for g in (first, second)]
        assert run.task.result() == 0
    for record in records:
        assert_won(record)


async def test_resyncs_are_counted_in_a_row_not_per_game(tmp_path: Path) -> None:
    """A refused move leaves our turn with no move on its way: the game resyncs. Four such
    stalls in one game, each followed by normal play, are four recoveries, never a reason
    to give the game up."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path)) as run:
            # An engine rival, so the game outlasts the four stalls.
            await server.start_opponent("rival", engine=strong_opponent(), movetime_s=0.02,
                                        challenge=ChallengeSpec(BOT, 300, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            for _ in range(4):
                reached = len(server.game_record(game_id).moves)
                server.fail(400, f"/api/bot/game/{game_id}/move/*", count=1)
                assert await plies(server, game_id, reached + 4)
            server.end_game(game_id, "draw")
            record = await server.wait_for_game_end(game_id, GUARD_S)
        assert run.task.result() == 0
    assert_legal(record)
    assert record.status == "draw"  # ended by the test, never given up by the bot
    assert run.metrics.rejected_moves == 4
    assert run.metrics.resyncs >= 4


async def test_a_game_that_crashes_is_resigned_and_the_others_play_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug inside one game (here: its state handling raises at the 6th ply) stays in that
    game's error boundary: that game is resigned, the other is played to its end, and the
    bot keeps running."""
    quiet_logs()
    doomed: list[str] = []
    original = Game._on_state

    def faulty(self: Game, state: Any, received: float) -> None:
        if self.id in doomed and len(state.moves) >= 6:
            raise RuntimeError("a bug in one game")
        original(self, state, received)

    monkeypatch.setattr(Game, "_on_state", faulty)
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path)) as run:
            first, second = await start_games(server, 2)
            doomed.append(first)
            crashed = await server.wait_for_game_end(first, GUARD_S)
            survivor = await server.wait_for_game_end(second, 60)
            assert not run.task.done()  # the bot itself is still running
        assert run.task.result() == 0
    bot_side = "white" if crashed.white.lower() == BOT else "black"
    assert crashed.status == "resign" and crashed.winner != bot_side
    assert_won(survivor)


OUTAGE_S = 45.0  # on the sandbox's clock and the alarms': simulated, not waited
OUTAGE_STEP_S = 3.0


async def test_a_long_move_outage_on_our_turn_is_outlasted_never_resigned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lila survives its own outages (RoundAsyncActor.scala `LilaStop`, `WsBoot`: time given
    back after a restart). The game's endpoints fail with 503 for 45 s on our turn at 3+2,
    far past the mover's deadline (cut to 0.5 s here) while our clock still has time: the
    bot keeps re-reading the game and trying, with backoff, and moves once the server is
    back. It never resigns (nor leaves the game) as error handling."""
    import bot.game.mover
    from sandbox.timers import ManualClock
    from tests.bot.e2e_support import AlarmClock
    from tests.bot.test_features_e2e import Human

    quiet_logs()
    monkeypatch.setattr(bot.game.mover, "MOVE_REQUEST_MAX_S", 0.5)
    monkeypatch.setattr(bot.game.mover, "MIN_MOVE_REQUEST_S", 0.5)
    sandbox_clock, watch = ManualClock(), AlarmClock()
    async with SandboxServer(keepalive_s=0.5, clock=sandbox_clock) as server:
        rival = Human(server, "rival")
        async with running_bot(server, make_config(tmp_path), alarm_clock=watch) as run:
            game_id = await server.challenge("rival", BOT, 180, 2, color="white")
            await rival.move_after(game_id, 0, "e2e4")
            assert await plies(server, game_id, 2)
            # Moves, the game stream and every other game endpoint: the server is down.
            server.fail(503, f"/api/bot/game/*{game_id}*", for_s=OUTAGE_S)
            await rival.move_after(game_id, 2)  # our second move meets the outage
            for _ in range(int(OUTAGE_S / OUTAGE_STEP_S)):
                await wait_for(lambda: run.metrics.rejected_moves > 0)
                sandbox_clock.advance(OUTAGE_STEP_S)
                watch.advance(OUTAGE_STEP_S)
                await watch.looked_at()
                assert not server.game_record(game_id).finished, "given up in the outage"
            for _ in range(10):  # the server is back: the next resync (at most 8 s) moves
                if len(server.game_record(game_id).moves) >= 4:
                    break
                watch.advance(OUTAGE_STEP_S)
                await watch.looked_at()
                await asyncio.sleep(0.2)
            assert await plies(server, game_id, 4)
            record = server.game_record(game_id)
            assert record.status != "resign", "resigned because the server failed"
            server.end_game(game_id, "draw")
        assert run.task.result() == 0
    assert run.metrics.rejected_moves >= 1
    assert run.metrics.resyncs > 3  # more than the old limit, still playing


async def test_silent_streams_are_reopened_after_two_missed_keep_alives(
        tmp_path: Path) -> None:
    """lila writes a keep-alive every 6 s on the event stream and every 7 s on a game
    stream (EventStream.scala, GameStateStream.scala). Both streams go silent without
    closing, at lila's cadence and with the client's real silence limits: each is reopened
    after at most two missed keep-alives (within 15 s), counted by the sandbox. The old 20 s
    limit let the event stream miss three, and lila sweeps a challenge unseen for 20 s."""
    from bot.lichess.client import ClientTimings
    from tests.bot.e2e_support import AlarmClock
    from tests.bot.test_features_e2e import Human

    quiet_logs()
    real = ClientTimings()
    timings = dataclasses.replace(FAST_TIMINGS, event_stream_silence_s=real.event_stream_silence_s,
                                  game_stream_silence_s=real.game_stream_silence_s)
    async with SandboxServer() as server:  # lila's keep-alives: 6 s and 7 s
        Human(server, "thinker")
        async with running_bot(server, make_config(tmp_path), timings=timings,
                               alarm_clock=AlarmClock()):  # no abort while it waits
            game_id = await server.pair("thinker", BOT, 300, 0)
            await wait_for(lambda: server.open_streams("game", BOT) == 1
                           and server.open_streams("event", BOT) == 1)
            silenced = server.lobby.hub.select("event", BOT) + server.lobby.hub.select(
                "game", BOT)
            for stream in silenced:
                stream.silence()
            await wait_for(lambda: all(s.closed for s in silenced))
            assert all(0 < s.missed_keepalives <= 2 for s in silenced), \
                [(s.kind, s.missed_keepalives) for s in silenced]
            await wait_for(lambda: server.open_streams("game", BOT) == 1
                           and server.open_streams("event", BOT) == 1)
            server.end_game(game_id, "draw")


async def test_a_failed_abort_is_retried_until_the_game_is_aborted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lila never expires a challenge game whose opponent has not moved: an abort that
    failed and was never tried again held the slot until the bot restarted. The abort
    endpoint fails for 20 s (simulated); the bot tries again, with backoff, and the game is
    aborted once the server answers."""
    import bot.lichess.client
    from sandbox.timers import ManualClock
    from tests.bot.e2e_support import AlarmClock
    from tests.bot.test_features_e2e import Human

    quiet_logs()
    # One try per abort request: each attempt of the bot is then one fired fault.
    monkeypatch.setattr(bot.lichess.client, "COMMAND_DEADLINE_S", 0.01)
    sandbox_clock, watch = ManualClock(), AlarmClock()
    async with SandboxServer(keepalive_s=0.5, clock=sandbox_clock) as server:
        Human(server, "idler")
        async with running_bot(server, make_config(tmp_path), alarm_clock=watch) as run:
            game_id = await server.challenge("idler", BOT, 180, 2, color="white")
            await wait_for(lambda: server.open_streams("game", BOT) == 1)
            outage = server.fail(503, f"/api/bot/game/{game_id}/abort", for_s=20.0)

            async def step_until(condition: Callable[[], bool]) -> None:
                for _ in range(20):
                    if condition():
                        return
                    watch.advance(3.0)  # past abort_after_s (2 s), then past each backoff
                    await watch.looked_at()
                    await asyncio.sleep(0.1)
                assert condition()

            await step_until(lambda: outage.fired >= 2)  # the failed abort is tried again
            sandbox_clock.advance(20.0)  # the server answers again
            await step_until(lambda: server.game_record(game_id).finished)
            record = server.game_record(game_id)
        assert run.task.result() == 0
    assert record.status == "aborted" and not record.moves
