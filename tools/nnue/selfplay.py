"""One self-play game of the built-in engine at a fixed node count, keeping its quiet positions.

Shared by the two training-data generators: `tools.texel.data` (positions labelled by the
game's result) and `tools.nnue.data` (positions with the search score and the result).
A position is kept when the side to move is not in check, the best move is neither a capture
nor a promotion, and the score is not a mate: the evaluation is what decides it.
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
from tools.match.openings import random_opening

SKIP_PLIES = 8  # the first plies after the opening are not sampled (still book-like)
WIN_CP = 1000  # scores beyond this for WIN_PLIES plies in a row: the game is adjudicated won
WIN_PLIES = 6
MAX_PLIES = 300  # a game still running after this many plies is a draw
HASH_MB = 16


def play_game(rng: random.Random, nodes: int, random_plies: int,
              net: Net | None = None) -> tuple[list[tuple[chess.Board, int]], str]:
    """One game from a random opening: its quiet positions, each with the search score (the
    side to move's view, centipawns), and the result ('1-0', '0-1' or '1/2-1/2').  Both sides
    evaluate with ``net``, or with the hand-written evaluation (None)."""
    board = random_opening(rng, random_plies)
    searcher = Searcher(HASH_MB)
    searcher.set_net(net)
    limits = GoLimits(nodes=nodes)
    kept: list[tuple[chess.Board, int]] = []
    white_scores: list[int] = []
    start_ply = board.ply()
    # The engine's own position follows the game, so its search sees the repetitions.
    position = Position.from_fen(board.fen())
    while True:
        outcome = board.outcome()
        if outcome is not None:
            return kept, outcome.result()
        # A draw either side may claim ends the game (the claim a referee would allow, read
        # from the past: a claim on the move to be played is not looked for, it costs more
        # than the search).
        if board.is_repetition(3) or board.halfmove_clock >= 100 \
                or board.ply() - start_ply >= MAX_PLIES:
            return kept, "1/2-1/2"
        found = searcher.think(position, limits, TimeBudget(None, None), time.monotonic(),
                               lambda _: None)
        if found.best_move is None:
            raise RuntimeError(f"the engine found no move in {board.fen()}")
        move = chess.Move.from_uci(found.best_move)
        quiet = (not board.is_check() and not board.is_capture(move)
                 and move.promotion is None and abs(found.score) < params.MATE_BOUND)
        if quiet and board.ply() - start_ply >= SKIP_PLIES:
            kept.append((board.copy(stack=False), found.score))
        white_scores.append(found.score if board.turn == chess.WHITE else -found.score)
        recent = white_scores[-WIN_PLIES:]
        if len(recent) == WIN_PLIES and all(s >= WIN_CP for s in recent):
            return kept, "1-0"
        if len(recent) == WIN_PLIES and all(s <= -WIN_CP for s in recent):
            return kept, "0-1"
        board.push(move)
        position.push_uci(found.best_move)
