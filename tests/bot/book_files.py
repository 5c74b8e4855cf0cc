"""Writes small Polyglot books for tests: 16-byte big-endian entries sorted by key."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

import chess
import chess.polyglot

ENTRY = struct.Struct(">QHHI")  # key, move, weight, learn


def encode_move(board: chess.Board, move: chess.Move) -> int:
    """Polyglot move bits: to file/rank, from file/rank, promotion; castling as king takes rook."""
    to_square = move.to_square
    if board.is_castling(move) and not board.chess960:
        rook_file = 7 if chess.square_file(move.to_square) == 6 else 0
        to_square = chess.square(rook_file, chess.square_rank(move.from_square))
    promotion = (move.promotion - 1) if move.promotion else 0
    return (
        chess.square_file(to_square)
        | chess.square_rank(to_square) << 3
        | chess.square_file(move.from_square) << 6
        | chess.square_rank(move.from_square) << 9
        | promotion << 12
    )


def write_book(path: Path, entries: Iterable[tuple[chess.Board, str, int]]) -> Path:
    """Write (position, UCI move, weight) entries as a Polyglot book at ``path``."""
    rows = []
    for board, uci, weight in entries:
        move = board.parse_uci(uci)
        rows.append((chess.polyglot.zobrist_hash(board), encode_move(board, move), weight, 0))
    rows.sort(key=lambda row: row[0])
    path.write_bytes(b"".join(ENTRY.pack(*row) for row in rows))
    return path
