"""The usual count of material in pawns (pawn 1, knight and bishop 3, rook 5, queen 9), one
reading for the tools that sort positions by it: the middlegames of the centipawn-loss
measurement (``tools.strength.positions``), the claims of a match (``tools.match.claims``)."""

from __future__ import annotations

import chess

PIECE_PAWNS = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def side_material(board: chess.Board, colour: chess.Color, pawns: bool = True) -> int:
    """``colour``'s material in pawns; with ``pawns`` False, its pieces' alone."""
    return sum(len(board.pieces(kind, colour)) * value for kind, value in PIECE_PAWNS.items()
               if pawns or kind != chess.PAWN)


def material_balance(board: chess.Board) -> int:
    """The side to move's material less the other side's, in pawns."""
    return side_material(board, board.turn) - side_material(board, not board.turn)
