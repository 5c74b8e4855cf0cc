"""The pure parts, on a hand-driven clock: limiter windows, game clocks, speeds."""

from __future__ import annotations

import chess
import pytest

from sandbox.challenges import decline_reason
from sandbox.clock import CorrespondenceClock, FischerClock
from sandbox.games import FirstMoveTimers
from sandbox.ratelimit import LilaRateLimit, SlidingWindow, consume_all
from sandbox.timecontrol import TimeControl


class FakeTime:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def test_sliding_window_frees_cost_as_it_ages() -> None:
    time = FakeTime()
    window = SlidingWindow(limit=3, window_s=10.0, now=time)
    assert window.consume("a", 2) == 0.0
    time.now_s += 4
    assert window.consume("a", 1) == 0.0
    assert window.consume("a", 1) == pytest.approx(6.0)  # the first 2 free at t+10
    assert window.consume("b", 3) == 0.0  # keys are separate
    time.now_s += 6
    assert window.count("a") == 1
    assert window.consume("a", 2) == 0.0
    assert window.consume("a", 5) == 10.0  # never fits


def test_lilas_rate_limit_opens_with_the_first_charge_and_clears_at_once() -> None:
    """lila's daily bot-game limit (memo RateLimit.scala): 24 h from the first game, then
    everything is free again; a rolling window would free one game at a time."""
    time = FakeTime()
    window = LilaRateLimit(limit=3, window_s=10.0, now=time)
    assert window.consume("a", 2) == 0.0
    time.now_s += 4
    assert window.consume("a", 1) == 0.0
    assert window.consume("a", 1) == pytest.approx(6.001)  # clearAt is t+10
    time.now_s += 7  # t+11: the window has cleared whole, not only the first 2
    assert window.consume("a", 3) == 0.0
    assert window.count("a") == 3
    assert window.consume("a", 1) == pytest.approx(10.001)  # a new window from t+11


def test_lilas_rate_limit_boundaries() -> None:
    """memo RateLimit.scala `apply`: a charge passes while the credits used are below the
    limit (`a < credits`), whatever its cost; a refused one passes only once the clock is
    past clearAt (`nowMillis > clearAt`); the cache forgets a key `duration` after its
    last write (`expireAfterWrite`), not after its first."""
    time = FakeTime()
    window = LilaRateLimit(limit=8, window_s=3600.0, now=time)
    for _ in range(3):
        assert window.consume("a", 2) == 0.0
    assert window.consume("a", 1) == 0.0  # 7 used
    assert window.consume("a", 2) == 0.0  # 7 < 8: passes, 9 used
    assert window.count("a") == 9
    time.now_s += 3600  # exactly clearAt, and the last write was at the start
    assert window.count("a") == 0  # forgotten: expired after its write
    assert window.consume("b", 7) == 0.0
    time.now_s += 1800
    assert window.consume("b", 0) == 0.0  # a zero cost is never counted
    assert window.consume("b", 1) == 0.0  # written again: kept past clearAt
    time.now_s += 1800  # exactly clearAt: still refused
    assert window.consume("b", 1) == pytest.approx(0.001)
    time.now_s += 0.001
    assert window.consume("b", 1) == 0.0 and window.count("b") == 1  # a new window
    # A key written again and again outlives its clearAt, and charges below the limit
    # go on counting in the old window.
    assert window.consume("c", 1) == 0.0
    time.now_s += 3000
    assert window.consume("c", 1) == 0.0
    time.now_s += 1000  # past clearAt, 1000 s after the last write
    assert window.consume("c", 1) == 0.0 and window.count("c") == 3


def test_a_composite_limit_keeps_the_charges_before_a_refusal() -> None:
    """memo RateLimit.composite: the limits are charged in turn; one that refuses stops
    the fold, and those before it keep their charge."""
    time = FakeTime()
    hour = LilaRateLimit(limit=8, window_s=3600.0, now=time)
    day = LilaRateLimit(limit=2, window_s=86400.0, now=time)
    assert consume_all((hour, day), "a", 2) == 0.0
    assert consume_all((hour, day), "a", 2) > 0  # the day refuses
    assert (hour.count("a"), day.count("a")) == (4, 2)


def test_fischer_clock_runs_only_once_started_and_adds_increments() -> None:
    time = FakeTime()
    clock = FischerClock(60, 2, now=time)
    time.now_s += 5
    assert clock.remaining_ms(chess.WHITE) == 60_000  # not started: no time passes
    clock.press(chess.WHITE)  # a press before the start changes nothing
    assert clock.remaining_ms(chess.WHITE) == 60_000
    clock.start(chess.WHITE)
    time.now_s += 1.5
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(58_500)
    clock.press(chess.WHITE)
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(60_500)
    time.now_s += 3
    assert clock.remaining_ms(chess.BLACK) == pytest.approx(57_000)
    assert clock.seconds_to_flag() == pytest.approx(57.0)
    time.now_s += 57
    assert clock.flagged(chess.BLACK) and not clock.flagged(chess.WHITE)
    clock.stop()
    time.now_s += 10
    assert clock.remaining_ms(chess.BLACK) == 0.0
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(60_500)


def test_after_a_takeback_the_side_to_move_has_the_running_clock() -> None:
    time = FakeTime()
    clock = FischerClock(60, 0, now=time)
    clock.start(chess.BLACK)
    time.now_s += 2
    clock.switch(chess.WHITE)
    time.now_s += 3
    assert clock.remaining_ms(chess.BLACK) == pytest.approx(58_000)
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(57_000)
    clock.switch(chess.WHITE)  # already running: nothing changes
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(57_000)


def test_a_clock_without_base_time_starts_with_three_seconds_or_the_increment() -> None:
    assert FischerClock(0, 1).initial_ms == 3_000
    assert FischerClock(0, 5).initial_ms == 5_000


def test_correspondence_clock_counts_down_for_the_side_to_move() -> None:
    time = FakeTime()
    clock = CorrespondenceClock(1, chess.WHITE, now=time)
    time.now_s += 3600
    assert clock.remaining_ms(chess.WHITE) == pytest.approx(82_800_000)
    assert clock.remaining_ms(chess.BLACK) == 86_400_000
    clock.press(chess.BLACK)
    assert clock.remaining_ms(chess.WHITE) == 86_400_000
    time.now_s += 86_400
    assert clock.seconds_to_flag() == 0.0


@pytest.mark.parametrize(("limit_s", "increment_s", "speed", "show"), [
    (15, 0, "ultraBullet", "¼+0"),
    (0, 1, "bullet", "0+1"),
    (60, 0, "bullet", "1+0"),
    (90, 2, "bullet", "1.5+2"),  # 90 + 40 * 2 = 170 s
    (180, 2, "blitz", "3+2"),
    (300, 3, "blitz", "5+3"),
    (480, 0, "rapid", "8+0"),
    (900, 10, "rapid", "15+10"),
    (1500, 0, "classical", "25+0"),
])
def test_speeds_follow_lilas_estimate(limit_s: int, increment_s: int, speed: str,
                                      show: str) -> None:
    control = TimeControl(limit_s, increment_s)
    assert (control.speed, control.show()) == (speed, show)


def test_days_and_unlimited_are_correspondence() -> None:
    assert TimeControl(days=3).json() == {"type": "correspondence", "daysPerTurn": 3}
    assert TimeControl().json() == {"type": "unlimited"}
    assert TimeControl().speed == TimeControl(days=1).speed == "correspondence"


@pytest.mark.parametrize(("sent", "key"), [
    ("timeControl", "timecontrol"), ("ONLYBOT", "onlybot"), (" later ", "later"),
    ("nonsense", "generic"), ("", "generic"),
])
def test_decline_reasons(sent: str, key: str) -> None:
    assert decline_reason(sent)[0] == key


@pytest.mark.parametrize(("speed", "source", "seconds"), [
    ("bullet", "lobby", 20.0), ("blitz", "pool", 25.0), ("classical", "lobby", 35.0),
    ("bullet", "arena", 16.0), ("rapid", "swiss", 25.0), ("blitz", "arena", 21.0),
])
def test_first_move_times_are_lilas(speed: str, source: str, seconds: float) -> None:
    assert FirstMoveTimers().seconds(speed, source) == seconds
