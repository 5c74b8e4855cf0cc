"""Sequential probability ratio test over game pairs (pentanomial model), as fishtest does.

A match plays every opening twice with colours swapped; the two games form a *pair* whose
score for the first engine is 0, 0.5, 1, 1.5 or 2.  The counts of the five pair scores are
the *pentanomial* results ``[LL, LD, DD + WL, WD, WW]``.  Pairs, not games, are the
independent trials: the two games of a pair share an opening, so their results correlate.

The log-likelihood ratio is the generalized one (GSPRT): the empirical distribution of pair
scores is replaced by its maximum-likelihood neighbour that satisfies H0 (resp. H1), and
the LLR is the log of the ratio of the two likelihoods of the observed counts.  Two Elo
conventions (``ELO_MODELS``):

* ``normalized`` (fishtest's and OpenBench's default): Elo proportional to the t-value
  ``(score - 0.5) / sigma`` of one game, so a bound means the same test length whatever the
  draw rate.  ``nElo = t * 800 / ln 10``; per pair the t-value is ``sqrt 2`` times larger.
* ``logistic``: the usual Elo, ``score = 1 / (1 + 10 ** (-elo / 400))``, on the expected
  score of a pair.

Bounds (Wald): stop for H1 at ``ln((1 - beta) / alpha)`` and for H0 at
``ln(beta / (1 - alpha))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ELO_MODELS = ("normalized", "logistic")
NELO_PER_T = 800.0 / math.log(10.0)  # normalized Elo of a t-value of 1 (one game)
EMPTY_CELL = 1e-3  # a pair score never seen counts this much, so every log is finite
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)  # pair points / 2: the outcome as a score in [0, 1]
_MLE_ITERATIONS = 10
_MLE_TOLERANCE = 1e-9
_ROOT_TOLERANCE = 1e-12


def logistic_score(elo: float) -> float:
    """Expected score of an Elo difference."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def _mean_variance(values: Sequence[float], probs: Sequence[float]) -> tuple[float, float]:
    mean = sum(p * a for a, p in zip(values, probs, strict=True))
    variance = sum(p * (a - mean) ** 2 for a, p in zip(values, probs, strict=True))
    return mean, variance


def _solve_lagrange(shifts: Sequence[float], probs: Sequence[float]) -> float:
    """The x with sum p_i * c_i / (1 + x c_i) = 0, keeping every 1 + x c_i > 0.

    The maximum-likelihood distribution q_i = p_i / (1 + x c_i) under the linear constraint
    sum q_i c_i = 0 (Lagrange multiplier x).  The sum falls strictly with x, so bisection
    between the poles finds the one root.
    """
    low_c, high_c = min(shifts), max(shifts)
    if not low_c < 0 < high_c:
        raise ValueError("the constrained value lies outside the possible pair scores")

    def f(x: float) -> float:
        return sum(p * c / (1.0 + x * c) for c, p in zip(shifts, probs, strict=True))

    low, high = -1.0 / high_c, -1.0 / low_c
    margin = 1e-9
    low, high = low + margin, high - margin
    for _ in range(200):
        middle = 0.5 * (low + high)
        if f(middle) > 0:
            low = middle
        else:
            high = middle
        if high - low < _ROOT_TOLERANCE:
            break
    return 0.5 * (low + high)


def mle_with_mean(probs: Sequence[float], values: Sequence[float], mean: float) -> list[float]:
    """The distribution on ``values`` nearest ``probs`` (maximum likelihood) with this mean."""
    shifts = [a - mean for a in values]
    x = _solve_lagrange(shifts, probs)
    return [p / (1.0 + x * c) for c, p in zip(shifts, probs, strict=True)]


def mle_with_t_value(probs: Sequence[float], values: Sequence[float], t: float) -> list[float]:
    """The distribution nearest ``probs`` whose (mean - 0.5) / sigma is ``t``.

    The constraint is not linear in the probabilities; it is linearized around the current
    estimate and solved again until the estimate stops moving (a few iterations).
    """
    estimate = [1.0 / len(values)] * len(values)
    for _ in range(_MLE_ITERATIONS):
        mean, variance = _mean_variance(values, estimate)
        sigma = math.sqrt(variance)
        shifts = [a - 0.5 - t * sigma * (1.0 + ((mean - a) / sigma) ** 2) / 2.0 for a in values]
        x = _solve_lagrange(shifts, probs)
        updated = [p / (1.0 + x * c) for c, p in zip(shifts, probs, strict=True)]
        moved = max(abs(u - e) for u, e in zip(updated, estimate, strict=True))
        estimate = updated
        if moved < _MLE_TOLERANCE:
            break
    return estimate


def llr(pentanomial: Sequence[int], elo0: float, elo1: float, model: str = "normalized") -> float:
    """Generalized log-likelihood ratio of H1 (elo1) against H0 (elo0) for the pair counts."""
    if len(pentanomial) != 5:
        raise ValueError(f"pentanomial counts are five numbers, got {list(pentanomial)}")
    if model not in ELO_MODELS:
        raise ValueError(f"Elo model must be one of {', '.join(ELO_MODELS)}, got {model!r}")
    counts = [float(n) if n > 0 else EMPTY_CELL for n in pentanomial]
    pairs = sum(counts)
    probs = [n / pairs for n in counts]
    h0, h1 = (_fit(probs, elo, model) for elo in (elo0, elo1))
    jumps = (p * (math.log(q1) - math.log(q0)) for p, q0, q1 in zip(probs, h0, h1, strict=True))
    return pairs * sum(jumps)


def _fit(probs: Sequence[float], elo: float, model: str) -> list[float]:
    """The maximum-likelihood pair-score distribution of strength ``elo``."""
    if model == "logistic":
        return mle_with_mean(probs, PAIR_SCORES, logistic_score(elo))
    # a pair is two games: its t-value is sqrt(2) times a game's
    return mle_with_t_value(probs, PAIR_SCORES, math.sqrt(2.0) * elo / NELO_PER_T)


@dataclass(frozen=True)
class SprtSpec:
    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str = "normalized"

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"SPRT needs elo0 < elo1, got [{self.elo0:g}, {self.elo1:g}]")
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0 < value < 0.5:
                raise ValueError(f"SPRT {name} must lie in (0, 0.5), got {value:g}")
        if self.model not in ELO_MODELS:
            raise ValueError(f"Elo model must be one of {', '.join(ELO_MODELS)}")

    @property
    def lower_bound(self) -> float:
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper_bound(self) -> float:
        return math.log((1.0 - self.beta) / self.alpha)

    def verdict(self, value: float) -> str | None:
        """'H1' (the change gains elo1), 'H0' (it does not gain elo0) or None: play on."""
        if value >= self.upper_bound:
            return "H1"
        if value <= self.lower_bound:
            return "H0"
        return None

    def describe(self) -> str:
        return (f"SPRT [{self.elo0:g}, {self.elo1:g}] {self.model} Elo, "
                f"alpha {self.alpha:g} beta {self.beta:g}, "
                f"bounds ({self.lower_bound:.2f}, {self.upper_bound:.2f})")


def pair_index(points: float) -> int:
    """Index in the pentanomial counts of a pair in which engine1 scored ``points`` (0-2)."""
    index = round(points * 2)
    if not 0 <= index <= 4 or abs(index - points * 2) > 1e-9:
        raise ValueError(f"a game pair scores 0, 0.5, 1, 1.5 or 2 points, not {points}")
    return index
