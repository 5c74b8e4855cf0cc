"""A Polyglot book learned from the bot's own games: what it played, weighted by how it scored.

Each game's moves by the bot's side, up to `max_plies` plies into the game, count for the
position they were played from: 2 points for a win, 1 for a draw, 0 for a loss. A move's
weight is `PRIOR_WEIGHT` plus its points, so one lost game lowers a move without erasing
it, and a line that wins is played more (Crafty's learned book, in Polyglot's format).
A move enters the book once the bot has played it there in at least `min_games` games.

Polyglot keys are defined for standard chess only (python-chess's `zobrist_hash` has no
keys for a variant's extra state, nor for Chess960's castling rights off the corner rooks),
so the book learns from standard games and games from a set-up position; the others are
skipped and counted. The bot's side is the player named in the `Annotator` header (the
bot writes its account name there) or the account given.

The book is written to a temporary file beside the target and renamed over it: a reader
never sees half a book, and a build that fails leaves the previous book as it was.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import chess
import chess.pgn
import chess.polyglot

PRIOR_WEIGHT: Final = 1  # a move's weight before any result counts
WIN_POINTS: Final = 2
DRAW_POINTS: Final = 1
MAX_WEIGHT: Final = 0xFFFF  # Polyglot's weight is 16 bits
DEFAULT_MIN_GAMES: Final = 1
DEFAULT_MAX_PLIES: Final = 20
# The variants a Polyglot key describes (PGN `Variant` header values, lowercased).
POLYGLOT_VARIANTS: Final = frozenset({"standard", "from position"})
_ENTRY: Final = struct.Struct(">QHHI")  # key, move, weight, learn: 16 bytes, big-endian
_PROMOTION_CODES: Final = {chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3, chess.QUEEN: 4}


LEARNED_BOOK_NAME: Final = "learned-book.bin"


def learned_book_path(state_dir: Path) -> Path:
    """Where the bot keeps the book it learns (`kibitz book build` writes it by default)."""
    return state_dir / LEARNED_BOOK_NAME


class LearnError(ValueError):
    """A record cannot be read; the message names the file and the game."""


@dataclass
class MoveStats:
    """How one move from one position scored for the bot."""

    games: int = 0
    points: int = 0

    @property
    def weight(self) -> int:
        return min(MAX_WEIGHT, PRIOR_WEIGHT + self.points)


@dataclass
class LearnedBook:
    """The positions and moves learned so far, and what was skipped."""

    moves: dict[tuple[int, int], MoveStats] = field(default_factory=dict)  # (key, move code)
    games: int = 0  # games that taught something
    skipped_variant: int = 0  # games of a variant Polyglot keys do not describe
    skipped_unfinished: int = 0  # games with no result
    skipped_not_ours: int = 0  # games the account did not play

    def entries(self, min_games: int) -> list[tuple[int, int, int]]:
        """(key, move code, weight) of the moves played in at least `min_games` games,
        sorted by key as Polyglot readers need (then by weight, highest first)."""
        kept = [(key, move, stats.weight) for (key, move), stats in self.moves.items()
                if stats.games >= min_games]
        kept.sort(key=lambda e: (e[0], -e[2], e[1]))
        return kept


def polyglot_move(board: chess.Board, move: chess.Move) -> int:
    """`move` from `board` in Polyglot's encoding: castling as the king taking its rook."""
    to_square = move.to_square
    if board.is_castling(move):
        rook_file = 7 if chess.square_file(move.to_square) > chess.square_file(
            move.from_square) else 0
        to_square = chess.square(rook_file, chess.square_rank(move.from_square))
    promotion = _PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0
    return (to_square | (move.from_square << 6) | (promotion << 12))


def _describe(path: Path, number: int, game: chess.pgn.Game) -> str:
    headers = game.headers
    ident = headers.get("GameId") or headers.get("Site", "?")
    return (f"{path}: game {number} ({headers.get('White', '?')} - "
            f"{headers.get('Black', '?')}, {ident})")


def _our_color(game: chess.pgn.Game, account: str | None) -> chess.Color | None:
    """The side of the player the Annotator header names, else of `account`."""
    white = game.headers.get("White", "").lower()
    black = game.headers.get("Black", "").lower()
    for name in (game.headers.get("Annotator", ""), account or ""):
        me = name.lower()
        if me and me == white:
            return chess.WHITE
        if me and me == black:
            return chess.BLACK
    return None


def _points(result: str, color: chess.Color) -> int | None:
    if result == "1/2-1/2":
        return DRAW_POINTS
    if result in ("1-0", "0-1"):
        won = (result == "1-0") == (color == chess.WHITE)
        return WIN_POINTS if won else 0
    return None


class _QuietBuilder(chess.pgn.GameBuilder[chess.pgn.Game]):
    """python-chess's game builder, keeping an error in `game.errors` without logging it:
    the build reports it once, with the file and the game."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


def read_games(path: Path) -> Iterator[tuple[int, chess.pgn.Game]]:
    """Each game of a PGN file, numbered from 1; a game python-chess could not read fully
    (an illegal move, a broken tag) raises :class:`LearnError` naming the file and game."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LearnError(f"{path}: cannot be read: {exc}") from exc
    stream = io.StringIO(text)
    number = 0
    while True:
        try:
            game = chess.pgn.read_game(stream, Visitor=_QuietBuilder)
        except (ValueError, KeyError) as exc:
            raise LearnError(f"{path}: game {number + 1}: unreadable: {exc}") from exc
        if game is None:
            return
        number += 1
        if game.errors:
            raise LearnError(f"{_describe(path, number, game)}: {game.errors[0]}")
        yield number, game


def learn(paths: Iterable[Path], *, account: str | None = None,
          max_plies: int = DEFAULT_MAX_PLIES) -> LearnedBook:
    """What the games in `paths` teach. `account`: the bot's name when the records do not
    say it in their `Annotator` header (games added by hand)."""
    book = LearnedBook()
    for path in paths:
        for number, game in read_games(path):
            _learn_game(book, path, number, game, account, max_plies)
    return book


def _learn_game(book: LearnedBook, path: Path, number: int, game: chess.pgn.Game,
                account: str | None, max_plies: int) -> None:
    variant = game.headers.get("Variant", "Standard").lower()
    if variant not in POLYGLOT_VARIANTS:
        book.skipped_variant += 1
        return
    color = _our_color(game, account)
    if color is None:
        book.skipped_not_ours += 1
        return
    points = _points(game.headers.get("Result", "*"), color)
    if points is None:
        book.skipped_unfinished += 1
        return
    try:
        board = game.board()
    except ValueError as exc:
        raise LearnError(f"{_describe(path, number, game)}: bad FEN: {exc}") from exc
    if board.chess960:
        book.skipped_variant += 1
        return
    for ply, move in enumerate(game.mainline_moves()):
        if ply >= max_plies:
            break
        if not board.is_legal(move):  # python-chess reports these as errors; kept as a guard
            raise LearnError(f"{_describe(path, number, game)}: illegal move {move} "
                             f"at ply {ply + 1}")
        if board.turn == color:
            slot = (chess.polyglot.zobrist_hash(board), polyglot_move(board, move))
            stats = book.moves.setdefault(slot, MoveStats())
            stats.games += 1
            stats.points += points
        board.push(move)
    book.games += 1


def write_book(path: Path, entries: Sequence[tuple[int, int, int]]) -> None:
    """Write the entries to `path` through a temporary file renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as out:
            for key, move, weight in entries:
                out.write(_ENTRY.pack(key, move, weight, 0))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def pgn_files(paths: Iterable[Path]) -> list[Path]:
    """The PGN files named, a directory standing for the `*.pgn` files in it (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.glob("*.pgn") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise LearnError(f"{path}: no such file or directory")
    return files


def build_book(sources: Iterable[Path], out: Path, *, account: str | None = None,
               min_games: int = DEFAULT_MIN_GAMES,
               max_plies: int = DEFAULT_MAX_PLIES) -> tuple[LearnedBook, int]:
    """Learn from the PGN files and directories in `sources` and write the book to `out`:
    what was learned and how many entries were written. Nothing is written when a record
    is bad (:class:`LearnError`)."""
    if min_games < 1:
        raise LearnError(f"min_games must be at least 1, not {min_games}")
    if max_plies < 1:
        raise LearnError(f"max_plies must be at least 1, not {max_plies}")
    learned = learn(pgn_files(sources), account=account, max_plies=max_plies)
    entries = learned.entries(min_games)
    write_book(out, entries)
    return learned, len(entries)
