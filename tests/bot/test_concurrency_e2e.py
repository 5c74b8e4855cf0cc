"""Many games at once on this 2-core machine: all finish, none lost on time, no illegal or
duplicate moves."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from bot.game.metrics import Metrics
from bot.lichess.client import ClientTimings
from bot.ops.config import Config
from sandbox.opponent import ChallengeSpec
from sandbox.ratelimit import RateLimits
from sandbox.server import GameRecord, SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAST_TIMINGS,
    assert_legal,
    bot_games,
    make_config,
    quiet_logs,
    running_bot,
    strong_opponent,
    wait_for,
)


async def play_simultaneous(
    config: Config, games: int, *, rival_engine: list[str] | None, timeout_s: float,
    server_requests_per_minute: int = 180, timings: ClientTimings = FAST_TIMINGS,
) -> tuple[list[GameRecord], Metrics]:
    limits = RateLimits(requests_per_minute=server_requests_per_minute)
    async with SandboxServer(keepalive_s=1.0, limits=limits) as server:
        async with running_bot(server, config, timings=timings) as run:
            for index in range(games):
                await server.start_opponent(
                    f"rival{index}", seed=index, engine=rival_engine, movetime_s=0.05,
                    challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            ids = await bot_games(server, games)
            records = [await server.wait_for_game_end(g, timeout_s) for g in ids]
        assert run.task.result() == 0
    return records, run.metrics


def check(records: list[GameRecord], metrics: Metrics, games: int) -> None:
    assert len(records) == games
    for record in records:
        assert record.finished
        assert_legal(record)
        bot_side = "white" if record.white.lower() == BOT else "black"
        # A flag against a side that cannot mate is a draw (Lichess's rule), not a loss.
        lost_on_time = record.status in ("outoftime", "timeout") and record.winner not in (
            bot_side, None)
        assert not lost_on_time, f"{record.id}: lost on time ({record.status})"
    assert metrics.rejected_moves == 0  # no move was sent twice or out of turn
    # Each of our moves was sent once: one timing per ply, per game.
    plies = Counter((m.game_id, m.ply) for m in metrics.moves)
    assert all(count == 1 for count in plies.values())
    assert sorted(o.game_id for o in metrics.games) == sorted(r.id for r in records)


async def test_four_quick_games_at_once(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path, concurrency=4)
    timings = dataclasses.replace(FAST_TIMINGS, requests_per_minute=10_000)
    records, metrics = await play_simultaneous(config, 4, rival_engine=None, timeout_s=60,
                                               server_requests_per_minute=20_000, timings=timings)
    check(records, metrics, 4)
    assert all(r.status == "mate" for r in records)


async def test_requests_keep_under_the_servers_overall_limit(tmp_path: Path) -> None:
    """A server that allows 90 requests a minute per token, in all: two games, their PV
    lines in both rooms (two chat requests a move), the event and game streams. The bot's
    one budget (80 a minute after a burst of 10) never earns a 429: chat lines are dropped
    when it is tight, moves go on."""
    quiet_logs()
    config = make_config(tmp_path, concurrency=2)
    timings = dataclasses.replace(FAST_TIMINGS, requests_per_minute=80, request_burst=10)
    limits = RateLimits(requests_per_minute=90)
    async with SandboxServer(keepalive_s=0.5, limits=limits) as server, \
            running_bot(server, config, timings=timings) as run:
        for index in range(2):
            await server.start_opponent(f"rival{index}", seed=index,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
        ids = await bot_games(server, 2)
        await wait_for(lambda: run.metrics.moves_sent >= 12, timeout_s=60)
        for game_id in ids:
            server.end_game(game_id, "draw")
    assert server.lobby.replies[(BOT, 429)] == 0  # not a port number in a log line
    assert run.metrics.chat_lines < 2 * run.metrics.moves_sent  # some were held and merged
    for game_id in ids:
        assert_legal(server.game_record(game_id))


@pytest.mark.slow
async def test_eight_one_minute_games_at_once_on_the_clock(tmp_path: Path) -> None:
    """The engine's own time management on the clock (no per-move cap), against an engine
    that moves fast: the bot's clock is what runs down. Eight bullet games make more moves
    than 180 a minute, so the move limit is raised on both sides: this measures CPU sharing
    and time allocation (pacing is the test above)."""
    quiet_logs()
    config = make_config(tmp_path, concurrency=8)
    config = dataclasses.replace(config, engine=dataclasses.replace(
        config.engine, max_move_s=None, first_move_s=1.0))
    timings = dataclasses.replace(FAST_TIMINGS, requests_per_minute=1000)
    records, metrics = await play_simultaneous(config, 8, rival_engine=strong_opponent(),
                                               timeout_s=200, server_requests_per_minute=1200,
                                               timings=timings)
    check(records, metrics, 8)

