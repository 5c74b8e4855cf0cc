"""A deterministic UCI sparring engine: the same position always gets the same move and scores.

It searches a fixed depth (option `Depth`, 1 by default: each move scored by the position it
leaves) on material and a small piece-square bonus, ignores the clock, and keeps no table
between searches, so two games from the same moves go the same way. It declares `MultiPV`
and reports that many lines, best first; equal scores go to the move first in UCI order.

    python tests/bot/sparring_engine.py
"""

from __future__ import annotations

import sys

import chess

VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 310, chess.ROOK: 500,
          chess.QUEEN: 900, chess.KING: 0}
CENTRE = frozenset({chess.D4, chess.E4, chess.D5, chess.E5})
NEAR_CENTRE = frozenset({chess.C3, chess.D3, chess.E3, chess.F3, chess.C6, chess.D6, chess.E6,
                         chess.F6, chess.C4, chess.F4, chess.C5, chess.F5})
MATE_CP = 30_000


def bonus(piece: chess.Piece, square: int) -> int:
    if piece.piece_type == chess.KING:
        return 0
    if square in CENTRE:
        return 20
    if square in NEAR_CENTRE:
        return 10 if piece.piece_type != chess.PAWN else 5
    home = 0 if piece.color == chess.WHITE else 7
    return -8 if piece.piece_type in (chess.KNIGHT, chess.BISHOP) and \
        chess.square_rank(square) == home else 0


def evaluate(board: chess.Board) -> int:
    """The score for the side to move."""
    if board.is_checkmate():
        return -MATE_CP
    if board.is_stalemate() or board.is_insufficient_material():
        return 0
    total = 0
    for square, piece in board.piece_map().items():
        value = VALUES[piece.piece_type] + bonus(piece, square)
        total += value if piece.color == board.turn else -value
    return total


def negamax(board: chess.Board, depth: int) -> int:
    if depth == 0 or board.is_game_over():
        return evaluate(board)
    best = -MATE_CP - 1
    for move in board.legal_moves:
        board.push(move)
        best = max(best, -negamax(board, depth - 1))
        board.pop()
    return best


def ranked(board: chess.Board, depth: int) -> list[tuple[int, chess.Move]]:
    scored = []
    for move in board.legal_moves:
        board.push(move)
        scored.append((-negamax(board, depth - 1), move))
        board.pop()
    scored.sort(key=lambda pair: (-pair[0], pair[1].uci()))
    return scored


def position(words: list[str]) -> chess.Board:
    if words[0] == "startpos":
        board, rest = chess.Board(), words[1:]
    else:
        end = words.index("moves") if "moves" in words else len(words)
        board, rest = chess.Board(" ".join(words[1:end])), words[end:]
    for uci in rest[1:] if rest[:1] == ["moves"] else []:
        board.push_uci(uci)
    return board


def main() -> None:
    board = chess.Board()
    depth, lines = 1, 1
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "uci":
            print("id name Sparring", "option name Depth type spin default 1 min 1 max 3",
                  "option name MultiPV type spin default 1 min 1 max 64",
                  "option name Hash type spin default 1 min 1 max 4096", "uciok",
                  sep="\n", flush=True)
        elif words[0] == "setoption" and len(words) >= 5:
            name, value = " ".join(words[2:words.index("value")]), words[-1]
            if name == "Depth":
                depth = int(value)
            elif name == "MultiPV":
                lines = int(value)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            board = position(words[1:])
        elif words[0] == "go":
            moves = ranked(board, depth)
            for rank, (score, move) in enumerate(moves[:lines], start=1):
                print(f"info depth {depth} multipv {rank} score cp {score} nodes 1 pv {move.uci()}")
            print(f"bestmove {moves[0][1].uci()}", flush=True)
        elif words[0] == "quit":
            return


if __name__ == "__main__":
    main()
