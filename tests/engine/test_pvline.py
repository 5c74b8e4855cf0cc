"""The search's principal variation: its legal start is found in one compiled walk, and the
line the search returns is legal and spelt for each of its movers."""

from __future__ import annotations

import random
import time

import chess
import numpy as np

from engine.board import Position
from engine.constants import MAX_MOVES
from engine.pvline import legal_prefix
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from tests.engine.conftest import state_snapshot
from tools.common.openings import random_opening


def test_legal_prefix_stops_at_the_first_illegal_move_and_restores_the_position() -> None:
    rng = random.Random(8)
    buf = np.zeros((64, MAX_MOVES), np.int32)
    for board in _middlegame_boards(rng, 40):
        position = Position.from_fen(board.fen())
        # a legal line, then a move of an earlier position of it (legal there, mostly not here)
        line: list[int] = []
        for _ in range(rng.randrange(1, 8)):
            moves = position.legal_moves()
            if not moves:
                break
            line.append(rng.choice(moves))
            position.push_unchecked(line[-1])
        for _ in line:
            position.pop()
        if line:
            line.append(line[rng.randrange(len(line))])
        expected = 0
        walk = board.copy()
        for _ in line:  # python-chess rules on each move of the line
            text = _uci_in(position, line, expected)
            if chess.Move.from_uci(text) not in walk.legal_moves:
                break
            walk.push_uci(text)
            expected += 1
        before = state_snapshot(position)
        count = legal_prefix(*position.arrays, np.array([*line, 0], np.int32), len(line), buf)
        assert count == expected, (board.fen(), line)
        assert state_snapshot(position) == before


def _uci_in(position: Position, line: list[int], index: int) -> str:
    """The UCI text of ``line[index]`` in the position after the line's first ``index`` moves
    (python-chess's spelling: castling king to its square)."""
    for move in line[:index]:
        position.push_unchecked(move)
    try:
        return position.move_to_uci(line[index])
    finally:
        for _ in line[:index]:
            position.pop()


def _middlegame_boards(rng: random.Random, count: int) -> list[chess.Board]:
    """Positions a few random plies after the built-in openings (castling still open)."""
    return [random_opening(rng, rng.randrange(0, 6)) for _ in range(count)]


def test_the_search_s_line_is_legal_and_spelt_for_its_movers() -> None:
    """Every move of the line ``think`` returns is legal in turn (castling of either side
    spelt king to its square)."""
    rng = random.Random(3)
    searcher = Searcher(1)
    castled = 0
    for board in _middlegame_boards(rng, 30):
        found = searcher.think(Position.from_fen(board.fen()), GoLimits(nodes=3000),
                               TimeBudget(None, None), time.monotonic(), lambda _: None)
        assert found.pv and found.best_move == found.pv[0]
        walk = board.copy()
        for text in found.pv:
            move = chess.Move.from_uci(text)
            assert move in walk.legal_moves, (board.fen(), found.pv)
            castled += walk.is_castling(move)
            walk.push(move)
    assert castled > 0  # castling moves were among the lines checked
