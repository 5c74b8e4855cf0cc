"""One self-play game of the built-in engine at a fixed node count, keeping its quiet positions.

Shared by the two training-data generators: `tools.texel.data` (positions labelled by the
game's result) and `tools.nnue.data` (positions with the search score and the result).
A position is kept when the side to move is not in check, the best move is neither a capture
nor a promotion, and the score is not a mate: the evaluation is what decides it.

With an opponent (``tools.common.opponent``) the game is the engine against it: the engine
still searches every position, for its label and for what is quiet, and on the opponent's
turns the opponent's move is played.
"""

from __future__ import annotations

import random
import time

import chess

from engine import params
from engine.board import Position
from engine.nnue import Net
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from tools.common.openings import random_opening
from tools.common.opponent import Opponent

SKIP_PLIES = 8  # the first plies after the opening are not sampled (still book-like)
WIN_CP = 1000  # scores beyond this for WIN_PLIES plies in a row: the game is adjudicated won
WIN_PLIES = 6
MAX_PLIES = 300  # a game still running after this many plies is a draw
HASH_MB = 16


# a threefold repetition needs two returns to the position, each of at least four reversible
# plies: a shorter run of them since the last capture or pawn move cannot hold one
REPETITION_MIN_PLIES = 8


def game_end(board: chess.Board, position: Position, start_ply: int) -> str | None:
    """The result of the game at ``board`` (``position`` the engine's copy of it), or None
    while it goes on; ``start_ply``: the ply it started from (for ``MAX_PLIES``).

    The end python-chess's ``board.outcome()`` finds, and the draws a player may claim, at
    a fraction of their cost: a mate or stalemate is read from the engine's move list; the
    other endings ``outcome()`` knows (a dead position, fivefold repetition, seventy-five
    moves) are draws that the claims here include.
    """
    if not position.legal_moves():
        if not position.in_check():
            return "1/2-1/2"
        return "0-1" if board.turn == chess.WHITE else "1-0"
    # A draw either side may claim ends the game (the claim a referee would allow, read from
    # the past: a claim on the move to be played is not looked for, it costs more than the
    # search).
    if board.is_insufficient_material() or board.halfmove_clock >= 100 \
            or board.ply() - start_ply >= MAX_PLIES \
            or (board.halfmove_clock >= REPETITION_MIN_PLIES and board.is_repetition(3)):
        return "1/2-1/2"
    return None


class SelfPlay:
    """Plays the games of one process: one searcher, emptied before each game, so a game is
    played as by a searcher of its own without allocating (and writing) its table again."""

    def __init__(self, net: Net | None = None) -> None:
        self.searcher = Searcher(HASH_MB)
        self.net = net

    def play_game(self, rng: random.Random, nodes: int, random_plies: int,
                  opponent: Opponent | None = None, opponent_color: chess.Color = chess.BLACK,
                  ) -> tuple[list[tuple[chess.Board, int]], str]:
        """One game from a random opening: its quiet positions, each with the search score
        (the side to move's view, centipawns), and the result ('1-0', '0-1' or '1/2-1/2').
        With ``opponent``, it plays ``opponent_color``'s moves."""
        board = random_opening(rng, random_plies)
        if opponent is not None:
            opponent.new_game()
        searcher = self.searcher
        searcher.clear()
        searcher.set_net(self.net)  # also empties the evaluation cache
        limits = GoLimits(nodes=nodes)
        budget = TimeBudget(None, None)
        kept: list[tuple[chess.Board, int]] = []
        white_scores: list[int] = []
        start_ply = board.ply()
        # The engine's own position follows the game, so its search sees the repetitions.
        position = Position.from_fen(board.fen())
        while True:
            result = game_end(board, position, start_ply)
            if result is not None:
                return kept, result
            # no reporter: self-play reads no ``info`` line, so none is built
            found = searcher.think(position, limits, budget, time.monotonic(), None)
            if found.best_move is None:
                raise RuntimeError(f"the engine found no move in {board.fen()}")
            move = chess.Move.from_uci(found.best_move)
            quiet = (move.promotion is None and abs(found.score) < params.MATE_BOUND
                     and not board.is_check() and not board.is_capture(move))
            if quiet and board.ply() - start_ply >= SKIP_PLIES:
                kept.append((board.copy(stack=False), found.score))
            white_scores.append(found.score if board.turn == chess.WHITE else -found.score)
            recent = white_scores[-WIN_PLIES:]
            if len(recent) == WIN_PLIES and all(s >= WIN_CP for s in recent):
                return kept, "1-0"
            if len(recent) == WIN_PLIES and all(s <= -WIN_CP for s in recent):
                return kept, "0-1"
            if opponent is not None and board.turn == opponent_color:
                move = opponent.move(board)
            board.push(move)
            position.push_uci(move.uci())


# one player per evaluation in a process: the searcher (and its table) outlives the games
_players: dict[str, SelfPlay] = {}


def play_game(rng: random.Random, nodes: int, random_plies: int, net: Net | None = None,
              opponent: Opponent | None = None, opponent_color: chess.Color = chess.BLACK,
              ) -> tuple[list[tuple[chess.Board, int]], str]:
    """One game (``SelfPlay.play_game``) by this process's player of ``net``: both sides
    evaluate with ``net``, or with the hand-written evaluation (None), or the other side is
    ``opponent``, playing ``opponent_color``."""
    key = "" if net is None else net.hash
    player = _players.get(key)
    if player is None or player.net is not net:
        player = _players[key] = SelfPlay(net)
    return player.play_game(rng, nodes, random_plies, opponent, opponent_color)
