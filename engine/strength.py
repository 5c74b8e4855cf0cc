"""Playing below full strength: ``UCI_LimitStrength`` and ``UCI_Elo`` as a search and a choice.

A limited level searches one thread, a few root lines (MultiPV: four at most levels, as
Stockfish's Skill; five at the floor, one where the pick no longer weakens), up to a node
budget, and then picks among the lines within a loss window of the best one, by Stockfish
15.1's Skill Level rule (its search.cpp ``Skill::pick_best``): every candidate's score gets
a push that grows with its loss from the best one (deterministic) and with a random share of
the spread of the candidates (the level's seeded generator), and the highest pushed score is
played.  The weakness (0 = always the best line; 128 = any candidate alike) and the window
grow as the level falls, so the mistakes come mostly from the small search missing tactics,
as a weak player's do, not from pieces given away at random.

Every tunable of the levels is the table ``ANCHORS``: one row per anchor Elo, each calibrated
on its own against Stockfish 15.1 at the same ``UCI_Elo`` (``tools.strength.calibrate``).
Between anchors the node budget is interpolated log-linearly (a level more is a constant
factor more nodes, smooth in the Elo, unlike an integer depth) and the other columns
linearly.

A limited level also spends a share of its clock as a person of that level would
(``think_time_ms``): the share grows with the level (beginners move fast, masters think),
is jittered by the same generator, is shorter when one move is obvious, and never exceeds
the full-strength allotment (the time manager's soft limit).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from engine.info import RootLine
from engine.timeman import TimeBudget

# The range of UCI_Elo.  The top is full strength on the CCRL scale (about 3,200 at 40/4
# equivalents).  The floor, 500, is the weakest setting that still plays chess rather than
# noise: a complete depth-1 search (captures resolved by quiescence) choosing alike among
# five lines within 550 cp of the best.  Below Stockfish's 1,350 there is no reference: the
# levels under the calibrated 1,400 are chained down from it, each anchor moved until a level
# scores about 200 Elo below the one 200 above it (docs/RESULTS.md).
ELO_MIN = 500
ELO_MAX = 3200
ELO_DEFAULT = 1500
PUSH_DIVISOR = 128  # pick_best's divisor: weakness 128 makes every candidate alike
PUSH_SPREAD_MAX_CP = 100  # the random push is at most a share of a pawn (pick_best's delta)
# One move is obvious (a recapture, the only way out) when the second line loses this much.
OBVIOUS_GAP_CP = 200
OBVIOUS_TIME_SHARE = 0.3  # ... and then the level thinks this share of its usual time
TIME_JITTER = 0.4  # the think time is drawn from share * [1 - jitter, 1 + jitter]


@dataclass(frozen=True)
class Anchor:
    """One calibrated level: its search and its choice."""

    elo: int
    lines: int  # the candidate lines searched (MultiPV; Stockfish's Skill searches 4)
    nodes: int  # the node budget of a move (depth 1 always ends, whatever it costs)
    weakness: float  # pick_best's weakness: 0 the best line always, 128 any candidate alike
    window_cp: int  # candidates lose at most this much against the best line
    time_share: float  # the share of the full-strength time allotment a move takes


# Tuned against Stockfish 15.1 at the same UCI_Elo (docs/RESULTS.md, "UCI_Elo calibration").
ANCHORS: tuple[Anchor, ...] = (
    Anchor(ELO_MIN, 5, 22, 128.0, 550, 0.20),
    Anchor(800, 4, 60, 124.0, 400, 0.25),
    Anchor(1000, 4, 200, 112.0, 150, 0.30),
    Anchor(1200, 4, 800, 96.0, 120, 0.35),
    Anchor(1400, 4, 1200, 90.0, 108, 0.40),
    Anchor(1600, 4, 2400, 82.5, 94, 0.45),  # interpolated (3,633 nodes): +111 with kibitz-15
    Anchor(1800, 4, 6_800, 75.0, 80, 0.50),  # 11,000 with kibitz-12: +85 with kibitz-16
    Anchor(2000, 4, 28_000, 45.0, 55, 0.575),
    Anchor(2200, 2, 90_000, 15.0, 30, 0.65),  # 250,000 with kibitz-13: +191 with kibitz-15
    Anchor(2600, 1, 2_000_000, 0.0, 0, 0.80),
    Anchor(ELO_MAX, 1, 10_000_000, 0.0, 0, 1.00),
)


@dataclass(frozen=True)
class Level:
    """The settings of one UCI_Elo, interpolated between its two anchors."""

    elo: int
    lines: int
    nodes: int
    weakness: float
    window_cp: int
    time_share: float


def clamp_elo(elo: int) -> int:
    return max(ELO_MIN, min(ELO_MAX, elo))


def level(elo: int) -> Level:
    """The settings of ``elo`` (clamped to ``ELO_MIN``-``ELO_MAX``)."""
    elo = clamp_elo(elo)
    elos = [anchor.elo for anchor in ANCHORS]
    upper = min(max(bisect.bisect_left(elos, elo), 1), len(ANCHORS) - 1)
    low, high = ANCHORS[upper - 1], ANCHORS[upper]
    f = (elo - low.elo) / (high.elo - low.elo)
    nodes = math.exp(math.log(low.nodes) + f * (math.log(high.nodes) - math.log(low.nodes)))
    return Level(
        elo=elo,
        lines=low.lines if f < 1.0 else high.lines,  # a count: the lower anchor's
        nodes=max(1, round(nodes)),
        weakness=low.weakness + f * (high.weakness - low.weakness),
        window_cp=round(low.window_cp + f * (high.window_cp - low.window_cp)),
        time_share=low.time_share + f * (high.time_share - low.time_share),
    )


def pick(lines: Sequence[RootLine], settings: Level, rng: random.Random) -> int:
    """The index of the line played among ``lines`` (best first), by pick_best's rule over
    the lines within the level's window of the best one."""
    if not lines:
        raise ValueError("pick: no line to choose from")
    top = lines[0].score
    candidates = [i for i, line in enumerate(lines)
                  if line.pv and top - line.score <= settings.window_cp]
    if not candidates:
        return 0
    spread = min(top - lines[candidates[-1]].score, PUSH_SPREAD_MAX_CP)
    chosen, best = candidates[0], -math.inf
    for i in candidates:
        loss = top - lines[i].score
        push = (settings.weakness * loss + spread * rng.random() * settings.weakness) / (
            PUSH_DIVISOR
        )
        if lines[i].score + push >= best:  # ties to the later line, as pick_best
            chosen, best = i, lines[i].score + push
    return chosen


def obvious(lines: Sequence[RootLine]) -> bool:
    """One move stands out: the only one, or every other loses ``OBVIOUS_GAP_CP`` or more."""
    return len(lines) < 2 or lines[0].score - lines[1].score >= OBVIOUS_GAP_CP


def think_time_ms(settings: Level, budget: TimeBudget, rng: random.Random,
                  is_obvious: bool) -> float:
    """How long a move of this level takes on the clock: the level's share of the
    full-strength allotment (``budget.soft_ms``), jittered, less for an obvious move, never
    above the allotment (nor the hard limit); 0 without a clock."""
    if budget.soft_ms is None:
        return 0.0
    share = settings.time_share * rng.uniform(1.0 - TIME_JITTER, 1.0 + TIME_JITTER)
    if is_obvious:
        share *= OBVIOUS_TIME_SHARE
    cap_ms = budget.soft_ms if budget.hard_ms is None else min(budget.soft_ms, budget.hard_ms)
    return max(0.0, min(cap_ms, budget.soft_ms * share))
