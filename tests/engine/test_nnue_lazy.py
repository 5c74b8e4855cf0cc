"""Accumulators made only when read (``nnue.ensure``): along a path that goes down and back up
as a search does, with null moves, every row the search would read equals a refresh."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np

from engine import nnue
from engine.board import Position, make_null
from engine.constants import M_PLY, NULL_MOVE, S_ACC, S_MOVE, StackArray
from tests.engine.conftest import random_net
from tests.engine.test_nnue import SPECIAL_FENS


def _source(stack: StackArray, row: int) -> int:
    """The row whose accumulators serve ``row``: null moves change no piece."""
    while stack[row, S_MOVE] == NULL_MOVE:
        row -= 1
    return row


def test_rows_made_when_read_equal_a_refresh_down_and_back_up(tmp_path: Path) -> None:
    net = random_net(tmp_path / "n.nnue", seed=5, hidden=16).net
    acc = nnue.new_accumulators(net.hidden)
    fresh = nnue.new_accumulators(net.hidden)
    rng = random.Random(2028)
    checked = skipped = siblings = 0
    for fen in (chess.STARTING_FEN, *SPECIAL_FENS):
        pos = Position.from_fen(fen)
        board, stack, keys, meta = pos.arrays
        root = int(meta[M_PLY])
        nnue.refresh(board, root, net.net16, net.net_meta, acc)  # as the search's root
        stack[root, S_ACC] = 1
        made_at: set[int] = set()  # rows below which a move was made and taken back
        for _ in range(300):
            row = int(meta[M_PLY])
            moves = pos.legal_moves()
            if row > root and (not moves or rng.random() < 0.35):
                pos.pop()  # back up: the next move from here is a sibling of this row
                made_at.add(row)
                continue
            # The search's rule: a row is brought up to date before a move is made from it.
            nnue.ensure(board, stack, row, net.net16, net.net_meta, acc)
            if not pos.in_check() and rng.random() < 0.1:
                make_null(board, stack, keys, meta)
            else:
                pos.push_unchecked(rng.choice(moves))
            row = int(meta[M_PLY])
            siblings += row in made_at
            if stack[row, S_MOVE] == NULL_MOVE or rng.random() < 0.4:
                skipped += 1  # not evaluated (a table cutoff, a cached score): no update
                continue
            nnue.ensure(board, stack, row, net.net16, net.net_meta, acc)
            src = _source(stack, row)
            nnue.refresh(board, src, net.net16, net.net_meta, fresh)
            assert np.array_equal(acc[src], fresh[src]), (fen, pos.fen())
            assert nnue.evaluate_net(stack, row, net.net16, net.net_meta, acc) == \
                nnue.evaluate_net(stack, row, net.net16, net.net_meta, fresh)
            checked += 1
    assert checked > 300 and skipped > 300 and siblings > 100, (checked, skipped, siblings)
