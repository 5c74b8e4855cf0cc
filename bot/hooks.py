"""Where game features plug into a game: move sources, chat commands, the game-finished hook.

A game asks its move sources in order (book, tablebase, online, ...) before the engine; the
first that answers plays. Chat lines from other users go to the chat-command handler, whose
replies are sanitized and sent. When a game ends, every finished hook gets its record (PGN).
Draw, resign and takeback decisions live in `bot.conduct`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import chess

from bot.events import ChatLine, Player


@dataclass(frozen=True, slots=True)
class GameContext:
    """What a hook may know about a game (read-only)."""

    game_id: str
    variant: str
    speed: str
    rated: bool
    me: str  # our user name
    color: chess.Color  # our side
    white: Player
    black: Player
    initial_fen: str  # "startpos" or a FEN
    clock_initial_s: float | None
    clock_increment_s: float | None

    @property
    def opponent(self) -> Player:
        return self.black if self.color == chess.WHITE else self.white


@dataclass(frozen=True, slots=True)
class SourcedMove:
    """A move a source chose, with its name ("book", "tablebase", ...) and any search info
    (python-chess InfoDict keys: score, pv, depth) for the kibitz line and the conduct rules."""

    move: chess.Move
    source: str
    info: Mapping[str, Any] = field(default_factory=dict)
    tablebase_wdl: int | None = None  # for us: 2 win .. -2 loss, when the source knows


class MoveSource(Protocol):
    name: str

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        """A move for `board` (our turn), or None to let the next source answer."""
        ...


@dataclass(frozen=True, slots=True)
class ChatReply:
    room: str  # "player" | "spectator"
    text: str


@dataclass(frozen=True, slots=True)
class GameView:
    """A snapshot for chat commands: the position and our latest search info."""

    context: GameContext
    board: chess.Board
    last_info: Mapping[str, Any]
    our_clock_s: float
    their_clock_s: float


class ChatCommandHandler(Protocol):
    async def handle(self, line: ChatLine, view: GameView) -> Sequence[ChatReply]:
        """Replies to one chat line from someone else (may be empty)."""
        ...


@dataclass(frozen=True, slots=True)
class GameRecord:
    """A finished game, for PGN writers and statistics."""

    context: GameContext
    moves: tuple[str, ...]  # UCI, as the server sent them
    status: str
    winner: str | None  # "white" | "black" | None
    result: str  # "1-0", "0-1", "1/2-1/2" or "*"
    started_at: float  # time.time()
    finished_at: float
    comments: Mapping[int, str]  # ply index -> our search info for the moves we played


class GameFinishedHook(Protocol):
    async def game_finished(self, record: GameRecord) -> None: ...


@dataclass(frozen=True, slots=True)
class GameHooks:
    """Everything plugged into the games of one bot."""

    move_sources: tuple[MoveSource, ...] = ()
    chat_commands: ChatCommandHandler | None = None
    finished: tuple[GameFinishedHook, ...] = ()


def result_string(status: str, winner: str | None) -> str:
    if winner == "white":
        return "1-0"
    if winner == "black":
        return "0-1"
    if status in ("draw", "stalemate", "insufficientMaterialClaim"):
        return "1/2-1/2"
    if status in ("timeout", "outoftime") and winner is None:
        return "1/2-1/2"  # flag against insufficient material
    return "*"
