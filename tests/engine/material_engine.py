"""A UCI engine that scores a position by its material alone and reports a win-draw-loss
estimate from that score (as Stockfish does with ``UCI_ShowWDL``): a reference engine whose
every reading a test can compute (``material_reading``).

    python tests/engine/material_engine.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import chess

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve

VALUES_CP = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500,
             chess.QUEEN: 900, chess.KING: 0}
OPTIONS = ("option name Hash type spin default 16 min 1 max 1024",
           "option name UCI_ShowWDL type check default false")


def material_reading(board: chess.Board) -> tuple[int, int, int, int]:
    """The score (side to move's view, cp) and the wins, draws and losses per mille."""
    cp = sum((1 if piece.color == board.turn else -1) * VALUES_CP[piece.piece_type]
             for piece in board.piece_map().values())
    wins = round(1000 / (1 + math.exp(-(cp - 50) / 100)))
    losses = round(1000 / (1 + math.exp(-(-cp - 50) / 100)))
    return cp, wins, 1000 - wins - losses, losses


def info_of(board: chess.Board) -> str:
    cp, wins, draws, losses = material_reading(board)
    return f"score cp {cp} wdl {wins} {draws} {losses}"


def main() -> None:
    serve("Material", OPTIONS, info_of=info_of)


if __name__ == "__main__":
    main()
