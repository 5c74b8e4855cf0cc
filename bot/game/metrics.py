"""What the bot measures of its games, for the status, the tests and the benchmark."""

from __future__ import annotations

from dataclasses import dataclass, field

import chess


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
    """What the bot measured, for tests and the benchmark."""

    moves: list[MoveTiming] = field(default_factory=list)
    games: list[GameOutcome] = field(default_factory=list)
    rejected_moves: int = 0
    engine_restarts: int = 0
    resyncs: int = 0
    ponders: int = 0  # searches started on the opponent's time
    chat_lines: list[tuple[str, str, str]] = field(default_factory=list)  # game, room, text

    def moved(self, timing: MoveTiming) -> None:
        self.moves.append(timing)

    def finished(self, outcome: GameOutcome) -> None:
        self.games.append(outcome)

    def chatted(self, game_id: str, room: str, text: str) -> None:
        self.chat_lines.append((game_id, room, text))
