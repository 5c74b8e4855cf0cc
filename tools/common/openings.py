"""The opening positions of a match: built-in balanced lines, or a FEN/EPD book file.

Every game of a match starts from one of them (``tools.match``), and the self-play data
generators (``tools.common.selfplay``) start from a built-in line plus random plies.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from pathlib import Path

import chess

# Balanced opening lines (SAN), each played with both colours.
OPENINGS: tuple[tuple[str, str], ...] = (
    ("Ruy Lopez", "e4 e5 Nf3 Nc6 Bb5 a6"),
    ("Italian", "e4 e5 Nf3 Nc6 Bc4 Bc5"),
    ("Sicilian Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    ("Sicilian Taimanov", "e4 c5 Nf3 e6 d4 cxd4 Nxd4 Nc6"),
    ("French Classical", "e4 e6 d4 d5 Nc3 Nf6"),
    ("French Advance", "e4 e6 d4 d5 e5 c5 c3 Nc6"),
    ("Caro-Kann Advance", "e4 c6 d4 d5 e5 Bf5"),
    ("Caro-Kann Classical", "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5"),
    ("Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6"),
    ("Slav", "d4 d5 c4 c6 Nf3 Nf6"),
    ("King's Indian", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("Nimzo-Indian", "d4 Nf6 c4 e6 Nc3 Bb4"),
    ("English", "c4 e5 Nc3 Nf6"),
    ("Reti", "Nf3 d5 g3 Nf6 Bg2"),
    ("Petrov", "e4 e5 Nf3 Nf6"),
    ("Queen's Indian", "d4 Nf6 c4 e6 Nf3 b6"),
    ("Scandinavian", "e4 d5 exd5 Qxd5 Nc3 Qa5"),
    ("Alekhine", "e4 Nf6 e5 Nd5 d4 d6"),
    ("Queen's Gambit Accepted", "d4 d5 c4 dxc4 Nf3 Nf6 e3 e6"),
    ("Vienna", "e4 e5 Nc3 Nf6"),
    ("Benoni", "d4 Nf6 c4 c5 d5 e6 Nc3 exd5 cxd5 d6"),
    ("Sicilian Alapin", "e4 c5 c3 Nf6 e5 Nd5"),
    ("Dutch", "d4 f5 g3 Nf6 Bg2"),
    ("Scotch", "e4 e5 Nf3 Nc6 d4 exd4 Nxd4"),
    ("Symmetrical English", "c4 c5 Nc3 Nc6 g3 g6"),
    ("Modern", "e4 g6 d4 Bg7 Nc3 d6"),
    ("London", "d4 d5 Bf4 Nf6 e3 e6"),
    ("Four Knights", "e4 e5 Nf3 Nc6 Nc3 Nf6"),
    ("Grunfeld", "d4 Nf6 c4 g6 Nc3 d5"),
    ("Pirc", "e4 d6 d4 Nf6 Nc3 g6"),
    ("Hedgehog English", "Nf3 Nf6 c4 b6 g3 Bb7 Bg2 e6"),
    ("Open Sicilian", "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4"),
)


@dataclass(frozen=True)
class Opening:
    name: str
    fen: str
    moves: tuple[chess.Move, ...]


@functools.cache
def _built_in_openings() -> tuple[Opening, ...]:
    """The built-in lines, parsed once: ``random_opening`` draws from them for every game."""
    return tuple(load_openings(None))


def random_opening(rng: random.Random, plies: int) -> chess.Board:
    """One of the built-in openings, drawn by ``rng``, then up to ``plies`` random legal plies
    (fewer if the game ends on the way)."""
    openings = _built_in_openings()
    opening = openings[rng.randrange(len(openings))]
    board = chess.Board(opening.fen)
    for move in opening.moves:
        board.push(move)
    for _ in range(plies):
        if board.is_game_over():
            break
        board.push(rng.choice(list(board.legal_moves)))
    return board


def load_openings(path: Path | None,
                  board_class: type[chess.Board] = chess.Board) -> list[Opening]:
    """Built-in SAN lines, or one FEN/EPD position per line of ``path``, on the variant's
    board (the built-in lines are played by its rules: a check counts in three-check)."""
    openings: list[Opening] = []
    if path is None:
        for name, line in OPENINGS:
            board = board_class()
            start_fen = board.fen()
            moves = []
            for san in line.split():
                move = board.parse_san(san)
                moves.append(move)
                board.push(move)
            openings.append(Opening(name, start_fen, tuple(moves)))
        return openings
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            board, _ = board_class.from_epd(text) if ";" in text else (board_class(text), {})
        except ValueError as error:
            raise SystemExit(f"{path}:{number}: not a FEN or EPD position: {error}") from None
        openings.append(Opening(f"{path.name}:{number}", board.fen(), ()))
    if not openings:
        raise SystemExit(f"{path}: no positions")
    return openings
