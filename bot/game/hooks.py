"""Where game features plug into a game: move sources, chat commands, game observers.

- Move sources (book, tablebase, online) are asked in order before the engine; the first
  that answers with a move plays it. A source may instead narrow the engine's root moves
  (a tablebase that only suggests), or name moves to avoid (a past game's, not to repeat).
- A chat-command handler answers chat lines from other users; the game posts the reply
  (sanitized) and carries out its action.
- Game observers follow the game (PGN records): its states, our moves, and its end; a game
  that ended while no one watched it (correspondence, between visits) goes to
  `finished_unwatched` instead.
Draw, resign and takeback decisions live in `bot.game.conduct`.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import chess

from bot.engines.searchline import SearchLine
from bot.lichess.events import GameFull, GameInfo, GameState, Player

# Our last search: the position it started from (the PV's root) and its line.
LastSearch = tuple[chess.Board, SearchLine]


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
    """A move a source chose, with its name ("book", "tablebase", ...) and the search line
    behind it, for the kibitz line, the PGN and the conduct rules (None: no search, a book
    move, say)."""

    move: chess.Move
    source: str
    line: SearchLine | None = None
    tablebase_wdl: int | None = None  # for us: 2 win .. -2 loss, when the source knows


@dataclass(frozen=True, slots=True)
class RootRestriction:
    """Not a move but advice: let the engine choose only among these moves."""

    moves: tuple[chess.Move, ...]
    source: str
    tablebase_wdl: int | None = None


@dataclass(frozen=True, slots=True)
class Avoid:
    """Not a move but a warning: these moves would repeat a past game against this opponent
    (lila's `botFarming`). Other sources' answers among them are passed over, and the engine
    plays another move if its MultiPV shows one within `margin_cp` of its best."""

    moves: frozenset[chess.Move]
    margin_cp: int
    source: str
    why: str  # for the log: which past game, at which ply


class MoveSource(Protocol):
    name: str

    async def choose(
        self, board: chess.Board, context: GameContext
    ) -> SourcedMove | RootRestriction | Avoid | None:
        """A move (or root advice) for `board`, our turn; None lets the next source answer."""
        ...


class CommandAction(enum.StrEnum):
    """What the game does after replying."""

    PV_ON = "pv_on"  # post the PV after our moves again
    PV_OFF = "pv_off"  # stop posting the PV after our moves
    WAIT = "wait"  # give the opponent more time before aborting


@dataclass(frozen=True, slots=True)
class CommandContext:
    """What the game knows when a command arrives."""

    me: str
    engine: str
    opponent: str
    eval_for_opponent: bool  # chat.eval_for_opponent: !eval answered in the player room
    abortable: bool
    wait_s: float  # how much longer the abort timer runs after !wait
    kibitz_on: bool  # whether the PV is posted after our moves now
    last_search: LastSearch | None = None
    queue: Sequence[str] | None = None  # challengers waiting, None if unknown


@dataclass(frozen=True, slots=True)
class CommandReply:
    room: str
    text: str
    action: CommandAction | None = None


class ChatCommandHandler(Protocol):
    """Answers one chat line (`bot.features.commands.CommandResponder` is the project's handler)."""

    def respond(self, *, room: str, username: str, text: str,
                context: CommandContext) -> CommandReply | None: ...


class GameObserver(Protocol):
    """Follows one game from its gameFull (PGN records, statistics)."""

    def game_state(self, state: GameState) -> None: ...

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        """Our move at `ply` (0-based); `board` is the position before it."""
        ...

    async def game_finished(self, status: str, winner: str | None) -> None: ...


@dataclass(frozen=True, slots=True)
class GameHooks:
    """Everything plugged into the games of one bot; each factory is called once per game."""

    move_sources: Callable[[GameContext], Sequence[MoveSource]] | None = None
    chat_commands: Callable[[], ChatCommandHandler] | None = None
    observers: tuple[Callable[[GameFull, GameContext], GameObserver], ...] = ()
    challenge_queue: Callable[[], Sequence[str]] | None = None  # who waits (for !queue)
    finished_unwatched: Callable[[GameInfo], Awaitable[object]] | None = None  # its gameFinish
