"""Time allocation."""

from __future__ import annotations

import functools

import chess
import pytest

from bot.game.clock import (
    MIN_ENGINE_CLOCK_S,
    UNTIMED_MOVE_S,
    LatencyMeter,
    load_factor,
    plan_move,
)

# plan_move with one base position's arguments; a test passes again those it changes.
plan = functools.partial(
    plan_move,
    turn=chess.WHITE, our_clock_s=60.0, their_clock_s=50.0, our_increment_s=1.0,
    their_increment_s=1.0, elapsed_s=0.2, clock_running=True, overhead_s=0.1, latency_s=0.05,
    first_move=False, first_move_s=3.0, thinking_games=1, cores=2,
)


def test_the_engine_sees_our_clock_less_reserve_and_elapsed_time() -> None:
    result = plan()
    limit = result.limit
    assert limit.white_clock == pytest.approx(60.0 - 0.2 - 0.15)
    assert limit.black_clock == 50.0
    assert limit.white_inc == 1.0 and limit.black_inc == 1.0
    assert result.reserve_s == pytest.approx(0.15)


def test_black_gets_its_own_clock() -> None:
    limit = plan(turn=chess.BLACK).limit
    assert limit.black_clock is not None and limit.black_clock < 60.0
    assert limit.white_clock == 50.0


def test_the_reserve_grows_when_games_share_the_cores() -> None:
    alone = plan(thinking_games=1)
    crowded = plan(thinking_games=8)
    assert load_factor(8, 2) == 4.0
    assert crowded.reserve_s == pytest.approx(4 * alone.reserve_s)
    assert crowded.limit.white_clock is not None and alone.limit.white_clock is not None
    assert crowded.limit.white_clock < alone.limit.white_clock


def test_first_move_has_its_own_short_budget() -> None:
    result = plan(first_move=True, clock_running=False)
    assert result.limit.time == 3.0
    assert result.limit.white_clock is None
    short = plan(first_move=True, our_clock_s=10.0)
    assert short.limit.time is not None and short.limit.time < 1.0


def test_time_trouble_never_gives_a_negative_clock() -> None:
    result = plan(our_clock_s=0.1, elapsed_s=0.5)
    assert result.limit.white_clock == MIN_ENGINE_CLOCK_S
    assert result.hard_limit_s > 0


def test_no_clock_means_a_fixed_budget() -> None:
    result = plan(our_clock_s=2147483.647, their_clock_s=2147483.647)
    assert result.limit.time == UNTIMED_MOVE_S


def test_max_move_caps_every_move() -> None:
    result = plan(max_move_s=0.5)
    assert result.limit.time == 0.5
    assert result.hard_limit_s < 0.5 + 2.0
    assert plan(first_move=True, max_move_s=0.2).limit.time == 0.2


def test_latency_meter_keeps_the_worst_recent_sample() -> None:
    meter = LatencyMeter(samples=3)
    assert meter.estimate_s == 0.0
    for sample in (0.05, 0.4, 0.1, 0.1, 0.1):
        meter.add(sample)
    assert meter.estimate_s == 0.1
    meter.add(-1.0)
    assert meter.estimate_s == 0.1


def test_lag_per_move_is_kept_back_for_the_moves_to_come() -> None:
    no_lag = plan(our_increment_s=0.0)
    lagging = plan(our_increment_s=0.0, lag_s=0.2)
    assert no_lag.limit.white_clock is not None and lagging.limit.white_clock is not None
    assert no_lag.limit.white_clock - lagging.limit.white_clock == pytest.approx(0.2 * 25)
    # An increment that pays for the lag keeps nothing back.
    assert plan(our_increment_s=1.0, lag_s=0.2).limit.white_clock == plan().limit.white_clock
    # Never more than half the clock.
    short = plan(our_clock_s=4.0, our_increment_s=0.0, lag_s=1.0)
    assert short.limit.white_clock is not None and short.limit.white_clock >= 1.5


def test_time_trouble_adds_a_movetime_cap() -> None:
    trouble = plan(our_clock_s=3.0, our_increment_s=0.0, thinking_games=4)
    assert trouble.limit.time is not None and trouble.limit.time < 0.1
    assert trouble.hard_limit_s < 1.0
    assert plan(our_clock_s=60.0).limit.time is None
