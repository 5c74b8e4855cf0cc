"""Tactics smoke test: Bratko-Kopec and Kaufman positions at a fixed node budget.

The budget makes the count reproducible (node counts do not depend on the machine's speed).
The asserted minimum is what the engine solves today, less a small margin; a drop below it
means the search or evaluation got weaker.
"""

from __future__ import annotations

import time
from pathlib import Path

import chess
import pytest

from engine.board import Position
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget

DATA = Path(__file__).resolve().parents[1] / "data"
NODE_BUDGET = 100_000


def solved(name: str, nodes: int) -> tuple[int, int, list[str]]:
    """(solved, total, ids of the failures) over the EPD file ``name``."""
    count = 0
    total = 0
    failures: list[str] = []
    for line in (DATA / name).read_text().splitlines():
        if not line.strip():
            continue
        board, ops = chess.Board.from_epd(line)
        searcher = Searcher(16)
        result = searcher.think(
            Position.from_fen(board.fen()), GoLimits(nodes=nodes), TimeBudget(None, None),
            time.monotonic(), lambda _: None,
        )
        assert result.best_move is not None
        move = chess.Move.from_uci(result.best_move)
        best = ops.get("bm")
        avoid = ops.get("am")
        ok = (not isinstance(best, list) or move in best) and (
            not isinstance(avoid, list) or move not in avoid
        )
        total += 1
        if ok:
            count += 1
        else:
            failures.append(str(ops.get("id")))
    return count, total, failures


@pytest.mark.parametrize(("name", "minimum"), [("bratko_kopec24.epd", 8), ("kaufman25.epd", 7)])
def test_solves_tactics_within_the_node_budget(name: str, minimum: int) -> None:
    count, total, failures = solved(name, NODE_BUDGET)
    assert count >= minimum, f"{count}/{total} solved; failed: {failures}"
