"""Search: exact mate distances, draws (stalemate, repetition, fifty moves), PV legality."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import chess
import pytest

from engine.board import Position
from engine.info import Iteration, SearchResult
from engine.params import MATE
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from tests.engine.uci_process import ROOT

UNLIMITED = TimeBudget(None, None)


def search(
    fen: str, moves: tuple[str, ...] = (), depth: int = 8, searcher: Searcher | None = None
) -> tuple[SearchResult, list[Iteration]]:
    position = Position.from_fen(fen)
    for text in moves:
        position.push_uci(text)
    iterations: list[Iteration] = []
    engine = searcher if searcher is not None else Searcher(8)
    result = engine.think(
        position, GoLimits(depth=depth), UNLIMITED, time.monotonic(), iterations.append
    )
    return result, iterations


# Positions with their exact shortest mate (verified by a full-width search to high depth).
MATES = [
    (1, "8/P6K/8/1R6/8/2p5/4p3/k7 w - - 0 1"),
    (2, "4k3/6p1/KP1PB3/p6p/8/8/R7/8 w - - 0 1"),
    (3, "r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1"),
    (3, "8/1pP4K/8/k7/8/4R2P/4B3/8 w - - 0 1"),
    (4, "8/4P3/3P4/2kpB3/8/2Kp4/3P4/7R w - - 0 1"),
    (5, "8/8/5PR1/1k6/8/5P2/3K4/8 w - - 0 1"),
]


@pytest.mark.parametrize(("moves", "fen"), MATES)
def test_finds_the_shortest_mate(moves: int, fen: str) -> None:
    result, iterations = search(fen, depth=2 * moves + 2)
    assert result.score == MATE - (2 * moves - 1)
    assert iterations[-1].score_text() == f"mate {moves}"
    board = chess.Board(fen)
    for text in result.pv:
        board.push_uci(text)
    assert len(result.pv) == 2 * moves - 1
    assert board.is_checkmate()


def test_mated_side_reports_the_longest_defence() -> None:
    # after 1.c8=Q the defender is mated in two more moves at best. Depth 12: late move
    # pruning skips quiet moves at the last plies, mating checks among them, so how deep the
    # mate is first seen depends on the move order (depth 6 before the threat terms, 10 after).
    result, iterations = search("8/1pP4K/8/k7/8/4R2P/4B3/8 w - - 0 1", ("c7c8q",), depth=12)
    assert result.score == -(MATE - 4)
    assert iterations[-1].score_text() == "mate -2"


def test_every_reported_pv_is_legal() -> None:
    fen = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8"
    _, iterations = search(fen, depth=9)
    assert iterations
    for iteration in iterations:
        board = chess.Board(fen)
        for text in iteration.pv:
            move = chess.Move.from_uci(text)
            assert move in board.legal_moves, (iteration.pv, board.fen())
            board.push(move)


def test_avoids_stalemating_when_winning() -> None:
    # Qxb3 wins the knight but stalemates; the queen mates instead.
    result, _ = search("8/8/1Q6/8/8/1n6/4K3/2k5 w - - 0 1", depth=10)
    assert result.best_move != "b6b3"
    assert result.score > 500


def test_seeks_stalemate_when_losing() -> None:
    # Black is a queen down for a rook; Rc6+ forces Kxc6 stalemate (or endless checks).
    result, _ = search("7k/8/3K2Q1/8/8/2r5/8/8 b - - 0 1", depth=8)
    assert result.best_move == "c3c6"
    assert result.score == 0


SHUFFLE_FEN = "1r6/7k/8/8/8/8/8/Q5K1 w - - 0 1"
SHUFFLE = ("a1a2", "b8b7", "a2a1", "b7b8", "a1a2", "b8b7")


def test_avoids_repetition_when_winning() -> None:
    # Qa1 would let Black repeat the start position a third time.
    result, _ = search(SHUFFLE_FEN, SHUFFLE, depth=8)
    assert result.best_move != "a2a1"
    assert result.score > 200


def test_seeks_repetition_when_losing() -> None:
    result, _ = search(SHUFFLE_FEN, (*SHUFFLE, "a2a1"), depth=8)
    assert result.best_move == "b7b8"
    assert result.score == 0


def test_fifty_move_rule_makes_a_won_ending_a_draw() -> None:
    result, _ = search("8/8/8/4k3/8/8/8/R3K3 w - - 99 80", depth=6)
    assert result.score == 0


def test_pawn_move_resets_the_fifty_move_count() -> None:
    result, _ = search("8/8/8/4k3/8/8/4P3/R3K3 w - - 98 80", depth=6)
    assert result.best_move in ("e2e3", "e2e4")
    assert result.score > 300


def test_checkmate_on_the_hundredth_half_move_still_wins() -> None:
    result, _ = search("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 99 80", depth=4)
    assert result.best_move == "d1d8"
    assert result.score == MATE - 1


def test_insufficient_material_is_a_draw() -> None:
    result, _ = search("8/8/4k3/8/8/3NK3/8/8 w - - 0 1", depth=6)
    assert result.score == 0


def test_table_carries_over_between_moves_and_clears() -> None:
    searcher = Searcher(1)
    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
    first, _ = search(fen, depth=8, searcher=searcher)
    again, _ = search(fen, depth=8, searcher=searcher)
    assert again.nodes < first.nodes  # the table remembers the previous search
    assert searcher.hashfull() > 0
    searcher.clear()
    assert searcher.hashfull() == 0
    cleared, _ = search(fen, depth=8, searcher=searcher)
    assert cleared.nodes == first.nodes  # an empty table searches exactly as the first time


def test_a_clear_cut_short_is_done_whole_by_the_next() -> None:
    searcher = Searcher(1)
    search("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4", depth=5,
           searcher=searcher)
    quitting = threading.Event()
    quitting.set()
    searcher.clear(quitting)
    assert searcher.tt_table.any()  # ``quit`` came first: the table was left as it was
    searcher.clear()
    assert not searcher.tt_table.any()


def test_node_limit_and_stop_flag() -> None:
    position = Position.startpos()
    searcher = Searcher(8)
    result = searcher.think(
        position, GoLimits(nodes=30_000), UNLIMITED, time.monotonic(), lambda _: None
    )
    assert result.nodes <= 30_000 + 1024
    assert result.best_move is not None
    searcher.request_stop()  # a stop before the search still leaves depth 1 and a move
    result = searcher.think(position, GoLimits(), UNLIMITED, time.monotonic(), lambda _: None)
    assert result.best_move in {m.uci() for m in chess.Board().legal_moves}
    assert position.fen() == chess.STARTING_FEN  # the position is restored


def test_bench_signature_is_deterministic() -> None:
    fen = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    first, _ = search(fen, depth=6)
    second, _ = search(fen, depth=6)
    assert (first.nodes, first.best_move, first.score) == (
        second.nodes,
        second.best_move,
        second.score,
    )


# Run in a process of its own: what other tests compiled or loaded must not hide a gap.
_FIRST_MOVES_AFTER_WARM_UP = """
import importlib, pkgutil
from numba.core.registry import CPUDispatcher
import engine
from engine.board import Position
from engine.nnue import net_for
from engine.params import DEFAULT_EVAL_FILE
from engine.search import warm_up

modules = [importlib.import_module(f"engine.{m.name}")
           for m in pkgutil.iter_modules(engine.__path__)
           if m.name not in ("__main__", "host", "launcher")]
def signatures():
    return {f"{module.__name__}.{name}": {str(sig) for sig in obj.signatures}
            for module in modules for name, obj in vars(module).items()
            if isinstance(obj, CPUDispatcher)}
warm_up(net_for(DEFAULT_EVAL_FILE))
before = signatures()
position = Position.startpos()
for text in ("e2e4", "e7e5", "g1f3"):  # what ``position startpos moves ...`` does
    position.push_uci(text)
position.pop()
after = signatures()
print(sorted(name for name in after if after[name] - before.get(name, set())))
"""


def test_a_games_moves_need_nothing_the_warm_up_did_not_load() -> None:
    run = subprocess.run([sys.executable, "-c", _FIRST_MOVES_AFTER_WARM_UP], check=True,
                         capture_output=True, text=True, timeout=600)
    assert run.stdout.strip() == "[]", run.stdout


# a capture-rich middle game (SEE, capture history, quiescence) and a check to answer
PLAIN_PYTHON_FENS = (
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r3k2r/pPp1qppp/2n2n2/3pP3/1b4b1/2N2N2/PP1Q1PPP/R3K2R w KQkq d6 0 1",
)
PLAIN_PYTHON_DEPTH = 3


def plain_python_lines() -> list[str]:
    """Each ``PLAIN_PYTHON_FENS`` position searched to ``PLAIN_PYTHON_DEPTH``: nodes and PV."""
    lines = []
    for fen in PLAIN_PYTHON_FENS:
        result, _ = search(fen, depth=PLAIN_PYTHON_DEPTH, searcher=Searcher(1))
        lines.append(f"{result.nodes} {' '.join(result.pv)}")
    return lines


def test_the_search_runs_as_plain_python_and_searches_the_same_tree() -> None:
    """``NUMBA_DISABLE_JIT=1`` (for debugging) runs the same search: the same node counts and
    lines as the compiled code."""
    script = ("import tests.engine.test_search as t\n"
              "print('\\n'.join(t.plain_python_lines()))")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    plain = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert plain.stdout.split("\n")[:-1] == plain_python_lines()
