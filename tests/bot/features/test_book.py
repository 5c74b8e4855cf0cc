"""Opening books: real Polyglot files written by the tests, probed through python-chess."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import chess
import pytest

from bot.features.book import BookError, BookSelection, OpeningBook
from tests.bot.book_files import write_book

START = chess.Board()


def _after(*ucis: str) -> chess.Board:
    board = chess.Board()
    for uci in ucis:
        board.push_uci(uci)
    return board


@pytest.fixture
def main_book(tmp_path: Path) -> Path:
    return write_book(
        tmp_path / "main.bin",
        [
            (START, "e2e4", 60),
            (START, "d2d4", 30),
            (START, "g1f3", 10),
            (START, "b2b3", 0),
            (_after("e2e4"), "c7c5", 5),
        ],
    )


def _start_move(book: OpeningBook) -> str:
    """The move ``book`` picks in the starting position, which it must have."""
    found = book.probe(chess.Board())
    assert found is not None
    return found.move.uci()


def test_best_move_takes_the_heaviest_entry(main_book: Path) -> None:
    with OpeningBook({"standard": [main_book]}, selection="best_move") as book:
        found = book.probe(chess.Board())
        assert found is not None
        assert found.move == chess.Move.from_uci("e2e4")
        assert found.weight == 60
        assert found.book == main_book
        reply = book.probe(_after("e2e4"))
        assert reply is not None and reply.move.uci() == "c7c5"


def test_weighted_random_follows_the_weights(main_book: Path) -> None:
    book = OpeningBook({"standard": [main_book]}, selection=BookSelection.WEIGHTED_RANDOM,
                       rng=random.Random(7))
    counts = Counter(_start_move(book) for _ in range(2000))
    assert set(counts) == {"e2e4", "d2d4", "g1f3"}  # weight 0 is below min_weight 1
    assert counts["e2e4"] > counts["d2d4"] > counts["g1f3"]
    assert 0.5 < counts["e2e4"] / 2000 < 0.7


def test_uniform_random_ignores_the_weights(main_book: Path) -> None:
    book = OpeningBook({"standard": [main_book]}, selection="uniform_random", rng=random.Random(3))
    counts = Counter(_start_move(book) for _ in range(1500))
    assert set(counts) == {"e2e4", "d2d4", "g1f3"}
    assert min(counts.values()) > 400


def test_min_weight_filters_entries(main_book: Path) -> None:
    book = OpeningBook({"standard": [main_book]}, selection="uniform_random", min_weight=30,
                       rng=random.Random(1))
    moves = {_start_move(book) for _ in range(200)}
    assert moves == {"e2e4", "d2d4"}
    assert book.probe(_after("e2e4")) is None  # c7c5 has weight 5
    zero = OpeningBook({"standard": [main_book]}, selection="uniform_random", min_weight=0,
                       rng=random.Random(1))
    assert "b2b3" in {_start_move(zero) for _ in range(300)}


def test_max_depth_counts_plies_of_this_game(main_book: Path) -> None:
    assert OpeningBook({"standard": [main_book]}, max_depth_plies=1).probe(_after("e2e4")) is None
    assert OpeningBook({"standard": [main_book]}, max_depth_plies=2).probe(_after("e2e4"))
    assert OpeningBook({"standard": [main_book]}, max_depth_plies=0).probe(chess.Board()) is None


def test_books_are_probed_in_order_and_per_variant(tmp_path: Path, main_book: Path) -> None:
    repertoire = write_book(tmp_path / "rep.bin", [(START, "c2c4", 1)])
    frc_board = chess.Board.from_chess960_pos(518 - 1)
    frc = write_book(tmp_path / "frc.bin", [(frc_board, "b1c3", 3)])
    book = OpeningBook({"standard": [repertoire, main_book], "chess960": [frc]},
                       selection="best_move")
    first = book.probe(chess.Board())
    assert first is not None and first.move.uci() == "c2c4" and first.book == repertoire
    # After 1.e4 the repertoire has nothing: the next book answers.
    second = book.probe(_after("e2e4"))
    assert second is not None and second.book == main_book
    # fromPosition games use the standard books; unknown variants have none.
    assert book.probe(chess.Board(), "fromPosition") is not None
    assert book.probe(chess.Board(), "atomic") is None
    found = book.probe(frc_board, "chess960")
    assert found is not None and found.move.uci() == "b1c3"
    assert book.variants == frozenset({"standard", "chess960"})
    own = OpeningBook({"standard": [main_book], "fromPosition": [repertoire]},
                      selection="best_move")
    found = own.probe(chess.Board(), "fromPosition")
    assert found is not None and found.book == repertoire  # its own books first


def test_castling_entries_become_legal_moves(tmp_path: Path) -> None:
    board = _after("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6")
    path = write_book(tmp_path / "castle.bin", [(board, "e1g1", 5)])
    found = OpeningBook({"standard": [path]}, selection="best_move").probe(board)
    assert found is not None and board.is_castling(found.move) and board.is_legal(found.move)


def test_illegal_entries_are_skipped(tmp_path: Path) -> None:
    # An entry under the start position's key whose move is illegal there.
    path = tmp_path / "bad.bin"
    good = write_book(tmp_path / "good.bin", [(START, "e2e4", 1)])
    data = bytearray(good.read_bytes())
    data[8:10] = (chess.E2 << 6 | chess.E5).to_bytes(2, "big")  # e2e5
    path.write_bytes(bytes(data))
    assert OpeningBook({"standard": [path]}).probe(chess.Board()) is None


def test_bad_configuration_names_the_problem(tmp_path: Path, main_book: Path) -> None:
    with pytest.raises(BookError, match=r"missing\.bin"):
        OpeningBook({"standard": [tmp_path / "missing.bin"]})
    broken = tmp_path / "broken.bin"
    broken.write_bytes(b"\x00" * 15)
    with pytest.raises(BookError, match=r"broken\.bin"):
        OpeningBook({"standard": [main_book, broken]})
    with pytest.raises(BookError, match="selection 'strongest'"):
        OpeningBook({}, selection="strongest")
    with pytest.raises(BookError, match="min_weight"):
        OpeningBook({}, min_weight=-1)
