"""Time management: budgets from the go limits, and the iteration clock."""

from __future__ import annotations

import pytest

from engine import params
from engine.timeman import GoLimits, IterationClock, TimeBudget, plan


def test_infinite_and_fixed_depth_are_unlimited() -> None:
    assert not plan(GoLimits(infinite=True, wtime_ms=1000), True, 30).limited
    assert not plan(GoLimits(depth=5), True, 30).limited
    assert not plan(GoLimits(nodes=10_000), False, 30).limited


def test_movetime_is_spent_almost_whole() -> None:
    budget = plan(GoLimits(movetime_ms=1000), True, 50)
    assert budget.hard_ms == 950
    assert budget.soft_ms is None  # no iteration is left unstarted to save time
    # a short movetime keeps back only a tenth of itself, not the whole overhead
    assert plan(GoLimits(movetime_ms=50), True, 30).hard_ms == 45
    assert plan(GoLimits(movetime_ms=200), True, 30).hard_ms == 180


def test_the_last_move_before_the_time_control_keeps_half_the_clock() -> None:
    budget = plan(GoLimits(wtime_ms=10_000, btime_ms=10_000, movestogo=1), True, 30)
    assert budget.hard_ms is not None
    assert budget.hard_ms <= 0.5 * 10_000


def test_uses_the_clock_of_the_side_to_move() -> None:
    limits = GoLimits(wtime_ms=60_000, btime_ms=6_000, winc_ms=0, binc_ms=0)
    white, black = plan(limits, True, 0), plan(limits, False, 0)
    assert white.soft_ms is not None and black.soft_ms is not None
    assert white.soft_ms > 5 * black.soft_ms


@pytest.mark.parametrize(
    ("time_ms", "inc_ms", "movestogo"),
    [
        (300_000, 0, None),
        (10_000, 100, None),
        (1_000, 0, None),
        (100, 0, None),
        (40, 0, None),
        (5_000, 50, None),
        (60_000, 0, 1),
        (60_000, 0, 40),
        (0, 0, None),
        (2_000, 2_000, None),
    ],
)
def test_hard_limit_always_leaves_time_on_the_clock(
    time_ms: int, inc_ms: int, movestogo: int | None
) -> None:
    overhead = 30
    budget = plan(GoLimits(wtime_ms=time_ms, winc_ms=inc_ms, movestogo=movestogo), True, overhead)
    assert budget.soft_ms is not None and budget.hard_ms is not None
    assert 0 < budget.soft_ms <= budget.hard_ms
    reserve = overhead + params.CLOCK_SAFETY_MS
    if time_ms > reserve + 10:
        assert budget.hard_ms <= (time_ms - reserve) * params.HARD_MAX_SHARE_LAST_MOVE
    else:
        assert budget.hard_ms == params.MIN_THINK_MS


def test_increment_raises_the_budget() -> None:
    without = plan(GoLimits(wtime_ms=10_000), True, 30)
    with_inc = plan(GoLimits(wtime_ms=10_000, winc_ms=1_000), True, 30)
    assert without.soft_ms is not None and with_inc.soft_ms is not None
    assert with_inc.soft_ms > without.soft_ms


def test_move_overhead_lowers_the_budget() -> None:
    low = plan(GoLimits(wtime_ms=2_000), True, 0)
    high = plan(GoLimits(wtime_ms=2_000), True, 1_000)
    assert low.hard_ms is not None and high.hard_ms is not None
    assert high.hard_ms < low.hard_ms


def test_unstable_best_move_earns_more_time_than_a_stable_one() -> None:
    budget = TimeBudget(1000.0, 4000.0)
    stable, unstable = IterationClock(budget), IterationClock(budget)
    for depth in range(8):
        stable.record_iteration(42)
        unstable.record_iteration(depth % 2)
    assert stable.scale() == pytest.approx(params.STABILITY_SCALE_MIN)
    assert unstable.scale() > 1.5 * stable.scale()
    elapsed = 0.8 * params.NEXT_ITERATION_SHARE * 1000.0 * params.INSTABILITY_SCALE_MAX
    assert unstable.may_start_iteration(elapsed)
    assert not stable.may_start_iteration(elapsed)


def test_unlimited_clock_always_starts_another_iteration() -> None:
    clock = IterationClock(TimeBudget(None, None))
    assert clock.may_start_iteration(10**9)
