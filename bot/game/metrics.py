"""What the bot measures of its games, for the status, the tests and the benchmark.

A bot runs for weeks: the counters count everything, while the per-move timings and the
finished games are kept in windows of the most recent ones, so memory stays flat.
"""

from __future__ import annotations

import bisect
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Final

import chess

# Windows small enough to fill within a benchmark's warm-up, large enough for its figures.
MOVES_KEPT: Final = 5_000  # per-move timings kept, the most recent (under 1 MB)
GAMES_KEPT: Final = 200  # finished games kept, the most recent (each with its move list)
CHALLENGES_KEPT: Final = 50  # challenge decisions kept, the most recent (the status page)
# Upper bounds of the per-move overhead histogram: a healthy bot answers within a few ms, a
# loaded one within tens; beyond a second something is wrong.
OVERHEAD_BUCKETS_S: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
ABORTED_STATUSES: Final = frozenset({"aborted", "noStart"})


@dataclass(slots=True)
class ThinkingLoad:
    """How busy the bot is (shared by all games): games in progress, games searching now."""

    thinking: int = 0
    games: int = 0


@dataclass(frozen=True, slots=True)
class MoveTiming:
    """One of our moves: the bot's own overhead (state arrival -> move request sent, minus
    the engine's thinking) and the thinking itself."""

    game_id: str
    ply: int
    overhead_s: float
    think_s: float
    source: str


@dataclass(frozen=True, slots=True)
class GameOutcome:
    game_id: str
    status: str
    winner: str | None
    color: chess.Color | None
    moves: tuple[str, ...]
    reason: str  # why the game task ended: "finished", "gave up: ...", "shutdown", ...


def result_of(outcome: GameOutcome) -> str:
    """win | loss | draw | aborted | unknown (we never learnt our colour), from our side."""
    if outcome.status in ABORTED_STATUSES:
        return "aborted"
    if outcome.color is None:
        return "unknown"
    if outcome.winner is None:
        return "draw"
    ours = "white" if outcome.color == chess.WHITE else "black"
    return "win" if outcome.winner == ours else "loss"


@dataclass(frozen=True, slots=True)
class ChallengeDecision:
    """What became of one incoming challenge: queued, accepted or declined (with the reason)."""

    at: float  # wall-clock time (epoch seconds)
    challenge_id: str
    challenger: str
    description: str  # "blitz 3+2 rated standard"
    decision: str  # "queued" | "accepted" | "declined"
    reason: str  # Lichess's decline reason key, "" when not declined
    why: str  # in words


@dataclass
class Histogram:
    """Cumulative-ready bucket counts of durations, for Prometheus (fixed upper bounds)."""

    bounds_s: tuple[float, ...] = OVERHEAD_BUCKETS_S
    counts: list[int] = field(default_factory=lambda: [0] * (len(OVERHEAD_BUCKETS_S) + 1))
    sum_s: float = 0.0

    def observe(self, value_s: float) -> None:
        self.counts[bisect.bisect_left(self.bounds_s, value_s)] += 1
        self.sum_s += value_s


@dataclass
class Metrics:
    """Counters for the life of the process; windows of the latest moves and games."""

    moves: deque[MoveTiming] = field(default_factory=lambda: deque(maxlen=MOVES_KEPT))
    games: deque[GameOutcome] = field(default_factory=lambda: deque(maxlen=GAMES_KEPT))
    moves_sent: int = 0
    games_finished: int = 0
    rejected_moves: int = 0
    engine_restarts: int = 0
    resyncs: int = 0
    ponders: int = 0  # searches started on the opponent's time
    chat_lines: int = 0  # lines posted to game chats
    stream_reconnects: int = 0  # the event stream reopened after a drop or silence
    results: Counter[str] = field(default_factory=Counter)  # result_of -> games
    challenges: Counter[tuple[str, str]] = field(default_factory=Counter)  # (decision, reason)
    recent_challenges: deque[ChallengeDecision] = field(
        default_factory=lambda: deque(maxlen=CHALLENGES_KEPT))
    overhead: Histogram = field(default_factory=Histogram)

    def moved(self, timing: MoveTiming) -> None:
        self.moves.append(timing)
        self.moves_sent += 1
        self.overhead.observe(timing.overhead_s)

    def finished(self, outcome: GameOutcome) -> None:
        self.games.append(outcome)
        self.games_finished += 1
        self.results[result_of(outcome)] += 1

    def challenge_decided(self, challenge_id: str, challenger: str, description: str,
                          decision: str, reason: str = "", why: str = "") -> None:
        self.challenges[decision, reason] += 1
        self.recent_challenges.append(ChallengeDecision(
            time.time(), challenge_id, challenger, description, decision, reason, why))

    def latest_games(self, count: int) -> list[GameOutcome]:
        """The last `count` games finished (fewer if the window no longer holds them)."""
        kept = min(count, len(self.games))
        return list(self.games)[len(self.games) - kept:] if kept > 0 else []
