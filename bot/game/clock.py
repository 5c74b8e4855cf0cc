"""Time allocation: what the engine is told about the clocks, and how long we wait for it.

The engine keeps its own time management (soft and hard limits from wtime/btime/winc/binc);
the bot only hides from it what it must not spend: the move overhead, the move -> echo
latency it measured, and the time already gone since the gameState arrived. Games that think
at the same time share the cores, so every reserve grows with the load.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

import chess
import chess.engine

MIN_ENGINE_CLOCK_S: Final = 0.05  # never tell the engine it has less than this
UNTIMED_MOVE_S: Final = 10.0  # thinking time per move when the game has no real clock
UNTIMED_CLOCK_S: Final = 24 * 3600.0  # a clock this long means: no clock (unlimited, days)
HARD_LIMIT_SHARE: Final = 0.5  # wait at most this share of the remaining clock for a move
HARD_LIMIT_SLACK_S: Final = 1.0  # plus this, before the engine counts as hung
FUTURE_MOVES: Final = 25  # moves still to play, for the lag they will cost (no increment)
FUTURE_LAG_MAX_SHARE: Final = 0.5  # the future lag hides at most this share of our clock
TROUBLE_CLOCK_S: Final = 5.0  # below this (times the load) the engine gets a movetime cap too
TROUBLE_SHARE: Final = 1 / 40  # the cap: this share of what is left
TROUBLE_SLACK_SHARE: Final = 0.25  # in time trouble the hard limit's slack is at most this share
LATENCY_SAMPLES: Final = 8  # move -> echo latencies kept per game


@dataclass(frozen=True, slots=True)
class ThinkPlan:
    """What to ask the engine, and how long to wait for its answer before calling it hung."""

    limit: chess.engine.Limit
    hard_limit_s: float
    reserve_s: float


def load_factor(thinking_games: int, cores: int) -> float:
    """How much slower each search runs when `thinking_games` share `cores` (>= 1)."""
    return max(1.0, thinking_games / max(1, cores))


def plan_move(
    *,
    turn: chess.Color,
    our_clock_s: float,
    their_clock_s: float,
    our_increment_s: float,
    their_increment_s: float,
    elapsed_s: float,
    clock_running: bool,
    overhead_s: float,
    latency_s: float,
    first_move: bool,
    first_move_s: float,
    thinking_games: int,
    cores: int,
    max_move_s: float | None = None,
    lag_s: float = 0.0,
) -> ThinkPlan:
    """The engine limit for our move.

    - first move: a short fixed budget (`first_move_s`), since the clock is not running yet
      and the opponent should not wait;
    - no real clock (unlimited, correspondence): a fixed `UNTIMED_MOVE_S`;
    - otherwise the clocks, ours reduced by the reserve (overhead + latency, scaled by load)
      and by the time gone since the state arrived, plus both increments;
    - `max_move_s`, if set, caps every move (UCI `movetime` next to the clocks);
    - `lag_s`, the clock each move costs beyond thinking, is kept back for the moves still to
      come when the increment does not pay for it (the engine cannot know about it).
    """
    load = load_factor(thinking_games, cores)
    reserve_s = (overhead_s + latency_s) * load
    if clock_running:
        our_clock_s -= elapsed_s
    if our_clock_s >= UNTIMED_CLOCK_S:
        untimed_s = min(UNTIMED_MOVE_S, max_move_s or UNTIMED_MOVE_S)
        return ThinkPlan(chess.engine.Limit(time=untimed_s),
                         untimed_s + HARD_LIMIT_SLACK_S * load, reserve_s)
    ours = max(MIN_ENGINE_CLOCK_S, our_clock_s - reserve_s)
    future_lag_s = max(0.0, lag_s - our_increment_s) * FUTURE_MOVES
    ours = max(MIN_ENGINE_CLOCK_S, ours - min(future_lag_s, FUTURE_LAG_MAX_SHARE * ours))
    if first_move:
        budget_s = min(first_move_s, max(MIN_ENGINE_CLOCK_S, ours / 10.0))
        if max_move_s is not None:
            budget_s = min(budget_s, max_move_s)
        return ThinkPlan(chess.engine.Limit(time=budget_s),
                         budget_s + HARD_LIMIT_SLACK_S * load, reserve_s)
    theirs = max(MIN_ENGINE_CLOCK_S, min(their_clock_s, UNTIMED_CLOCK_S))
    white_s, black_s = (ours, theirs) if turn == chess.WHITE else (theirs, ours)
    white_inc, black_inc = (
        (our_increment_s, their_increment_s) if turn == chess.WHITE
        else (their_increment_s, our_increment_s)
    )
    # Time trouble: an engine starved of CPU by other games overshoots its own estimate, so
    # it also gets a plain movetime, and the wait for it is cut short.
    cap_s = max_move_s
    slack_s = HARD_LIMIT_SLACK_S * load
    if ours < TROUBLE_CLOCK_S * load:
        trouble_cap_s = max(MIN_ENGINE_CLOCK_S / 5, ours * TROUBLE_SHARE + our_increment_s / 2)
        cap_s = trouble_cap_s if cap_s is None else min(cap_s, trouble_cap_s)
        slack_s = min(slack_s, TROUBLE_SLACK_SHARE * ours)
    limit = chess.engine.Limit(
        white_clock=white_s, black_clock=black_s, white_inc=white_inc, black_inc=black_inc,
        time=cap_s,
    )
    hard_limit_s = HARD_LIMIT_SHARE * ours + our_increment_s / 2
    if cap_s is not None:
        hard_limit_s = min(hard_limit_s, cap_s)
    return ThinkPlan(limit, hard_limit_s + slack_s, reserve_s)


class LatencyMeter:
    """Move request sent -> our move echoed in a gameState, over the last few moves.

    The estimate is the largest recent sample, so one slow echo keeps a margin for a while.
    """

    def __init__(self, samples: int = LATENCY_SAMPLES) -> None:
        self._samples: deque[float] = deque(maxlen=samples)

    def add(self, latency_s: float) -> None:
        if latency_s >= 0:
            self._samples.append(latency_s)

    @property
    def estimate_s(self) -> float:
        return max(self._samples, default=0.0)

    @property
    def mean_s(self) -> float:
        return sum(self._samples) / len(self._samples) if self._samples else 0.0
