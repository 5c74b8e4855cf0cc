"""What the bot measures of its games, for the status, the tests and the benchmark.

A bot runs for weeks: the counters count everything, while the per-move timings and the
finished games are kept in windows of the most recent ones, so memory stays flat.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

import chess

# Windows small enough to fill within a benchmark's warm-up, large enough for its figures.
MOVES_KEPT: Final = 5_000  # per-move timings kept, the most recent (under 1 MB)
GAMES_KEPT: Final = 200  # finished games kept, the most recent (each with its move list)


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

    def moved(self, timing: MoveTiming) -> None:
        self.moves.append(timing)
        self.moves_sent += 1

    def finished(self, outcome: GameOutcome) -> None:
        self.games.append(outcome)
        self.games_finished += 1

    def latest_games(self, count: int) -> list[GameOutcome]:
        """The last `count` games finished (fewer if the window no longer holds them)."""
        kept = min(count, len(self.games))
        return list(self.games)[len(self.games) - kept:] if kept > 0 else []
