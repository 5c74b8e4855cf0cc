"""CPU time of each evaluation kernel on its own, over the bench positions.

``python -m tools.bench.eval_kernels [--reps N]`` prints nanoseconds per call of: a move made
and unmade, the same with ``nnue.push`` (the difference is the incremental update),
``nnue.refresh``, ``nnue.evaluate_net`` (the output layer), ``nnue.net_score`` and an
eval-cache hit.  Multiplied by how often a node calls each, they say which share of a node's
time the evaluation takes.  CPU time of this process, so that other processes on a shared
machine slow the figures less than they slow the wall clock.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from engine import nnue
from engine.bench import BENCH_FENS
from engine.board import Position, make_move, unmake_move
from engine.constants import (
    M_PLY,
    BoardArray,
    Int64Array,
    KeyArray,
    MetaArray,
    MoveArray,
    StackArray,
)
from engine.evalcache import cached_evaluate, new_cache
from engine.evaluate import new_scratch
from engine.jit import njit
from engine.nnue import Int16Array, Int32Array
from engine.params import DEFAULT_EVAL_FILE


@njit
def _make_unmake(
    board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, moves: MoveArray,
    reps: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array, push: bool,
) -> int:
    """Every move made (and pushed) and unmade, ``reps`` times; the calls made."""
    for _ in range(reps):
        for i in range(moves.shape[0]):
            make_move(board, stack, keys, meta, moves[i])
            if push:
                nnue.push(board, stack, meta, net16, net_meta, acc)
            unmake_move(board, stack, meta)
    return reps * int(moves.shape[0])


@njit
def _refresh(
    board: BoardArray, row: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array,
    reps: int,
) -> int:
    for _ in range(reps):
        nnue.refresh(board, row, net16, net_meta, acc)
    return reps


@njit
def _scores(
    stack: StackArray, row: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array,
    reps: int, search_score: bool,
) -> int:
    """``nnue.net_score`` (as the search takes it) or ``nnue.evaluate_net``, ``reps`` times."""
    total = 0
    for _ in range(reps):
        if search_score:
            total += nnue.net_score(stack, row, net16, net_meta, acc)
        else:
            total += nnue.evaluate_net(stack, row, net16, net_meta, acc)
    return total


@njit
def _cache_hit(
    board: BoardArray, stack: StackArray, keys: KeyArray, row: int, scratch: Int64Array,
    cache: KeyArray, net16: Int16Array, net_meta: Int32Array, acc: Int16Array, reps: int,
) -> int:
    total = 0
    for _ in range(reps):
        total += cached_evaluate(board, stack, keys, row, scratch, cache, net16, net_meta, acc)
    return total


def _cpu_ns(run: Callable[[], int]) -> tuple[int, int]:
    """CPU nanoseconds of one ``run`` (after one to compile and warm it) and its call count."""
    run()
    started = time.process_time_ns()
    calls = run()
    return time.process_time_ns() - started, calls


def _position_costs(fen: str, net: nnue.Net, reps: int) -> dict[str, tuple[int, int]]:
    """Each kernel's (CPU ns, calls) at one position and its moves."""
    net16, net_meta = net.net16, net.net_meta
    acc = nnue.new_accumulators(net.hidden)
    position = Position.from_fen(fen)
    board, stack, keys, meta = position.arrays
    row = int(meta[M_PLY])
    moves = np.array(position.legal_moves(), dtype=np.int32)
    nnue.refresh(board, row, net16, net_meta, acc)
    evals = 10 * reps
    cache = new_cache()
    scratch = new_scratch()
    runs: dict[str, Callable[[], int]] = {
        "make+unmake": lambda: _make_unmake(
            board, stack, keys, meta, moves, reps, net16, net_meta, acc, False),
        "make+push+unmake": lambda: _make_unmake(
            board, stack, keys, meta, moves, reps, net16, net_meta, acc, True),
        "refresh": lambda: _refresh(board, row, net16, net_meta, acc, reps),
        "evaluate_net": lambda: evals + 0 * _scores(
            stack, row, net16, net_meta, acc, evals, False),
        "net_score": lambda: evals + 0 * _scores(stack, row, net16, net_meta, acc, evals, True),
        "eval cache hit": lambda: evals + 0 * _cache_hit(
            board, stack, keys, row, scratch, cache, net16, net_meta, acc, evals),
    }
    return {name: _cpu_ns(run) for name, run in runs.items()}


def profile(reps: int) -> dict[str, float]:
    """Nanoseconds per call of each kernel over all the bench positions."""
    net = nnue.net_for(DEFAULT_EVAL_FILE)
    spent: dict[str, int] = {}
    calls: dict[str, int] = {}
    for fen in BENCH_FENS:
        for name, (ns, n) in _position_costs(fen, net, reps).items():
            spent[name] = spent.get(name, 0) + ns
            calls[name] = calls.get(name, 0) + n
    per_call = {name: spent[name] / max(calls[name], 1) for name in spent}
    per_call["push"] = per_call["make+push+unmake"] - per_call["make+unmake"]
    return per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300, help="repetitions per position")
    args = parser.parse_args()
    for name, ns in profile(args.reps).items():
        print(f"{name:30s} {ns:8.1f} ns")


if __name__ == "__main__":
    main()
