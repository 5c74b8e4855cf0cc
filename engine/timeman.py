"""Time management: from the UCI ``go`` limits to a soft and a hard time limit.

* soft limit: no new iteration of iterative deepening starts after it (scaled by best-move
  stability: a best move that keeps changing earns more time, a stable one less);
* hard limit: the search is stopped, wherever it is, by a timer that sets the stop flag.

Every budget leaves ``Move Overhead`` plus a small safety margin on the clock, and the hard limit
never exceeds a fixed share of the remaining time, so the engine does not lose on time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import params


@dataclass(frozen=True)
class GoLimits:
    """The limits of one UCI ``go`` command (times in milliseconds)."""

    wtime_ms: int | None = None
    btime_ms: int | None = None
    winc_ms: int = 0
    binc_ms: int = 0
    movestogo: int | None = None
    movetime_ms: int | None = None
    depth: int | None = None
    nodes: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class TimeBudget:
    """Soft and hard limits in milliseconds from the start of thinking; None = unlimited."""

    soft_ms: float | None
    hard_ms: float | None

    @property
    def limited(self) -> bool:
        return self.hard_ms is not None


UNLIMITED = TimeBudget(None, None)


def plan(limits: GoLimits, white_to_move: bool, move_overhead_ms: int) -> TimeBudget:
    """The time budget for one move.

    ``infinite`` (and ``depth``/``nodes``/``mate`` without a clock) search until told to stop;
    ``movetime`` is spent whole, less a share of the overhead; a clock is shared out over the
    moves to go.
    """
    if limits.infinite:
        return UNLIMITED
    if limits.movetime_ms is not None:
        # A fixed time is used whole: no soft limit (an iteration cut short still counts), and
        # only a small share of it kept back for the overhead.
        kept_ms = min(move_overhead_ms, limits.movetime_ms * params.MOVETIME_OVERHEAD_SHARE)
        think_ms = max(float(params.MIN_THINK_MS), limits.movetime_ms - kept_ms)
        return TimeBudget(None, think_ms)
    time_left_ms = limits.wtime_ms if white_to_move else limits.btime_ms
    if time_left_ms is None:
        return UNLIMITED
    increment_ms = max(0, limits.winc_ms if white_to_move else limits.binc_ms)
    moves_to_go = limits.movestogo if limits.movestogo else params.MOVES_TO_GO_DEFAULT
    moves_to_go = max(1, min(moves_to_go, params.MOVES_TO_GO_DEFAULT * 2))
    # Every move still to play costs the overhead on top of its thinking (lag, the GUI's and
    # the engine's own fixed time per move), so it is kept back for all of them, not just this
    # one: with a short clock and many moves to go the engine plays fast from the start.
    pool_ms = (
        time_left_ms
        + increment_ms * (moves_to_go - 1)
        - move_overhead_ms * (moves_to_go + 2)
        - params.CLOCK_SAFETY_MS
    )
    per_move_ms = max(float(params.MIN_THINK_MS), pool_ms / moves_to_go)
    # This move may never use more than a share of what the clock really holds.
    reserve_ms = move_overhead_ms + params.CLOCK_SAFETY_MS
    available_ms = max(float(params.MIN_THINK_MS), time_left_ms - reserve_ms)
    if moves_to_go == 1:
        hard_cap_ms = available_ms * params.HARD_MAX_SHARE_LAST_MOVE
    else:
        hard_cap_ms = available_ms * params.HARD_MAX_SHARE
    hard_ms = min(per_move_ms * params.SOFT_SHARE * params.HARD_MULTIPLIER, hard_cap_ms)
    hard_ms = max(float(params.MIN_THINK_MS), hard_ms)
    soft_ms = min(per_move_ms * params.SOFT_SHARE, hard_ms)
    return TimeBudget(soft_ms, hard_ms)


class IterationClock:
    """Decides between iterations whether another one should start.

    Best-move instability is a decaying count of best-move changes: each change adds one and every
    iteration keeps only ``INSTABILITY_DECAY`` of the old total, so recent changes weigh most.
    """

    def __init__(self, budget: TimeBudget) -> None:
        self.budget = budget
        self.instability = 0.0
        self._last_best: int | None = None

    def record_iteration(self, best_move: int) -> None:
        self.instability *= params.INSTABILITY_DECAY
        if self._last_best is not None and best_move != self._last_best:
            self.instability += 1.0
        self._last_best = best_move

    def scale(self) -> float:
        """Soft-limit factor from STABILITY_SCALE_MIN (stable) to INSTABILITY_SCALE_MAX."""
        factor = params.STABILITY_SCALE_MIN + params.INSTABILITY_WEIGHT * self.instability
        return min(params.INSTABILITY_SCALE_MAX, factor)

    def may_start_iteration(self, elapsed_ms: float) -> bool:
        soft_ms = self.budget.soft_ms
        if soft_ms is None:
            return True
        hard_ms = self.budget.hard_ms if self.budget.hard_ms is not None else soft_ms
        return elapsed_ms < min(soft_ms * self.scale(), hard_ms) * params.NEXT_ITERATION_SHARE
