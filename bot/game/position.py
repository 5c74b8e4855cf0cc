"""The board sync: one game's board kept in step with the move list the server sends.

Moves arrive as UCI in either castling notation; a move list that extends ours is played on,
any other (a takeback, a reopened stream) is replayed from the start position. The clocks of
the last state, run down by the time since it arrived, are read from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess

from bot.game.hooks import GameContext
from bot.lichess.events import GameState
from bot.lichess.variants import new_board


def initial_board(variant: str, initial_fen: str) -> chess.Board:
    """The start position, on python-chess's board for the variant (its rules: legality, SAN,
    game end; crazyhouse pockets follow from the moves replayed on it)."""
    return new_board(variant, initial_fen)


def replay(board: chess.Board, moves: tuple[str, ...]) -> chess.Board:
    """`board` with `moves` (UCI, either castling notation) played; ValueError on a bad move."""
    for uci in moves:
        board.push(board.parse_uci(uci))
    return board


def common_prefix(moves: tuple[str, ...], other: tuple[str, ...]) -> int:
    """How many moves two move lists share from the start."""
    shared = 0
    for ours, theirs in zip(moves, other, strict=False):
        if ours != theirs:
            break
        shared += 1
    return shared


def wire_uci(board: chess.Board, move: chess.Move, variant: str) -> str:
    """The move as we send it: king-to-rook castling for chess960, e1g1 otherwise."""
    if variant != "chess960" and board.is_castling(move):
        king_file = chess.square_file(move.from_square)
        if king_file == 4:  # the standard king square: the e1g1/e1c1 form is unambiguous
            kingside = board.is_kingside_castling(move)
            rank = chess.square_rank(move.from_square)
            return chess.Move(move.from_square, chess.square(6 if kingside else 2, rank)).uci()
    return move.uci()


@dataclass(frozen=True, slots=True)
class Step:
    """What a new move list did to the board."""

    new_ply: bool  # the move count changed: a move was played or taken back
    kept: int | None = None  # a takeback (or a rebuilt list): the moves that stay


class Position:
    """The board of one game as of the last move list the server sent."""

    def __init__(self, context: GameContext) -> None:
        """ValueError if the initial position cannot be set up."""
        self.context = context
        self.board = initial_board(context.variant, context.initial_fen)
        self.moves: tuple[str, ...] = ()
        self.state: GameState | None = None
        self.state_received = 0.0  # monotonic seconds when `state` arrived

    def sync(self, moves: tuple[str, ...]) -> Step:
        """Bring the board to `moves`; ValueError (board unchanged) if they do not replay."""
        if moves == self.moves:
            return Step(new_ply=False)
        extends = moves[: len(self.moves)] == self.moves
        if extends:
            board = replay(self.board.copy(), moves[len(self.moves):])
        else:
            board = replay(initial_board(self.context.variant, self.context.initial_fen), moves)
        step = Step(new_ply=len(moves) != len(self.moves),
                    kept=None if extends else common_prefix(moves, self.moves))
        self.board = board
        self.moves = moves
        return step

    def record(self, state: GameState, received: float) -> None:
        self.state = state
        self.state_received = received

    @property
    def our_turn(self) -> bool:
        return self.board.turn == self.context.color

    @property
    def abortable(self) -> bool:
        """Lichess lets a game be aborted until both sides have moved."""
        return len(self.moves) < 2

    def clocks_s(self, now: float) -> tuple[float, float]:
        """(ours, theirs) in seconds as of `now` (monotonic); zeros before the first state."""
        state = self.state
        if state is None:
            return (0.0, 0.0)
        color = self.context.color
        ours, theirs = state.clock_for(color).time_s, state.clock_for(not color).time_s
        if len(state.moves) >= 2:  # the clock runs from the second move on
            elapsed_s = now - self.state_received
            if self.board.turn == color:
                ours -= elapsed_s
            else:
                theirs -= elapsed_s
        return (ours, theirs)
