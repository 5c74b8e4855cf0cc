"""Polyglot opening books: several books per variant, probed in order.

A book is a file of 16-byte big-endian entries (Zobrist key, move, weight,
learn) sorted by key; python-chess reads it through a memory map. The first
book of the game's variant that knows the position answers, so a small
hand-made repertoire can sit in front of a big general book.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.polyglot

# Variants that fall back on the books of another variant when they have none of
# their own: a game "from position" is standard chess from a set-up position.
VARIANT_BOOK_ALIASES: Mapping[str, str] = {"fromPosition": "standard"}


class BookError(ValueError):
    """A configured book cannot be used; the message names the file."""


class BookSelection(enum.StrEnum):
    """How a move is picked among the book's entries for a position."""

    BEST_MOVE = "best_move"  # the highest weight; ties go to the first entry
    WEIGHTED_RANDOM = "weighted_random"  # random, in proportion to the weights
    UNIFORM_RANDOM = "uniform_random"  # random, every entry alike


@dataclass(frozen=True, slots=True)
class BookMove:
    """A move found in a book, with where it came from (for logs and PGN comments)."""

    move: chess.Move
    weight: int
    book: Path


class OpeningBook:
    """The books of every variant, opened once and shared by all games.

    ``books`` maps a Lichess variant key ("standard", "chess960", ...) to the
    book files to probe in order. Probing is a few memory-mapped reads, cheap
    enough to run on the event loop.
    """

    def __init__(
        self,
        books: Mapping[str, Sequence[Path | str]],
        *,
        selection: BookSelection | str = BookSelection.WEIGHTED_RANDOM,
        min_weight: int = 1,
        max_depth_plies: int = 20,
        rng: random.Random | None = None,
    ) -> None:
        try:
            self.selection = BookSelection(selection)
        except ValueError:
            allowed = ", ".join(s.value for s in BookSelection)
            raise BookError(f"book selection {selection!r} is not one of: {allowed}") from None
        if min_weight < 0:
            raise BookError(f"book min_weight must be >= 0, not {min_weight}")
        if max_depth_plies < 0:
            raise BookError(f"book max_depth must be >= 0 plies, not {max_depth_plies}")
        self.min_weight = min_weight
        self.max_depth_plies = max_depth_plies
        self._rng = rng or random.Random()
        self._readers: dict[str, list[tuple[Path, chess.polyglot.MemoryMappedReader]]] = {}
        try:
            for variant, paths in books.items():
                self._readers[variant] = [(Path(p), _open_book(Path(p))) for p in paths]
        except BookError:
            self.close()
            raise

    @property
    def variants(self) -> frozenset[str]:
        """Variant keys that have at least one book."""
        return frozenset(v for v, readers in self._readers.items() if readers)

    def probe(self, board: chess.Board, variant: str = "standard") -> BookMove | None:
        """The book move for ``board`` in a game of ``variant``, or None.

        Depth is the number of plies played in this game (``board.move_stack``),
        so a game from a set-up position gets its full book depth too.
        """
        if len(board.move_stack) >= self.max_depth_plies:
            return None
        readers = self._readers.get(variant) or self._readers.get(
            VARIANT_BOOK_ALIASES.get(variant, variant), [])
        for path, reader in readers:
            entries = [
                entry
                for entry in reader.find_all(board, minimum_weight=self.min_weight)
                if board.is_legal(entry.move)
            ]
            if entries:
                entry = self._select(entries)
                return BookMove(move=entry.move, weight=entry.weight, book=path)
        return None

    def best_other(self, board: chess.Board, variant: str,
                   avoid: Collection[chess.Move]) -> BookMove | None:
        """The heaviest entry of the first book that knows a move for ``board`` other than
        those in ``avoid`` (a past game's, not to be repeated), within the book's depth."""
        if len(board.move_stack) >= self.max_depth_plies:
            return None
        readers = self._readers.get(variant) or self._readers.get(
            VARIANT_BOOK_ALIASES.get(variant, variant), [])
        for path, reader in readers:
            entries = [entry for entry in reader.find_all(board, minimum_weight=self.min_weight)
                       if entry.move not in avoid and board.is_legal(entry.move)]
            if entries:
                entry = max(entries, key=lambda e: e.weight)
                return BookMove(move=entry.move, weight=entry.weight, book=path)
        return None

    def _select(self, entries: list[chess.polyglot.Entry]) -> chess.polyglot.Entry:
        if self.selection is BookSelection.BEST_MOVE:
            return max(entries, key=lambda e: e.weight)
        if self.selection is BookSelection.UNIFORM_RANDOM:
            return self._rng.choice(entries)
        total = sum(e.weight for e in entries)
        if total == 0:  # only zero-weight entries (min_weight 0): no preference
            return self._rng.choice(entries)
        return self._rng.choices(entries, weights=[e.weight for e in entries])[0]

    def close(self) -> None:
        """Unmap every book."""
        for readers in self._readers.values():
            for _, reader in readers:
                reader.close()
        self._readers.clear()

    def __enter__(self) -> OpeningBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_book(path: Path) -> chess.polyglot.MemoryMappedReader:
    if not path.is_file():
        raise BookError(f"opening book {str(path)!r} does not exist or is not a file")
    try:
        return chess.polyglot.open_reader(path)
    except OSError as exc:
        raise BookError(f"opening book {str(path)!r} cannot be read as Polyglot: {exc}") from exc
