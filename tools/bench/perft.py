"""Perft speed of the engine beside python-chess, and the engine's compile/start-up times.

``python -m tools.bench.perft`` (``make bench``) prints, for the start position and Kiwipete:
nodes per second of the engine's perft (every leaf made and unmade, no bulk counting) and of
python-chess doing the same push/pop perft in the same run, and their ratio.  Then the time a
fresh process takes to import the rules modules and compile them, once with an empty numba
cache (cold) and once with that cache filled (warm).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import chess

from engine.board import Position
from engine.perft import perft

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
STARTPOS = chess.STARTING_FEN

# (name, FEN, engine depth, python-chess depth): depths chosen for runs of about a second
POSITIONS = (
    ("startpos", STARTPOS, 5, 4),
    ("kiwipete", KIWIPETE, 4, 3),
)
TARGET_NPS = 10_000_000
TARGET_RATIO = 100.0
REPEATS = 3  # best of: the machine is shared, the fastest run is the least disturbed one

# What a fresh process does before it can search: import the rules and compile (or load from
# the cache) every compiled function the engine uses.
_WARM_UP = """
import time
start = time.perf_counter()
import numpy as np
from engine.board import Position, make_null, unmake_null
from engine.constants import MAX_MOVES
from engine.movegen import gen_captures
from engine.perft import divide, perft, perft_bulk
pos = Position.startpos()
pos.push_uci("e2e4")
perft(*pos.arrays, 2)
perft_bulk(*pos.arrays, 2)
divide(pos, 2)
make_null(*pos.arrays)
unmake_null(pos.stack, pos.meta)
gen_captures(pos.board, pos.stack, pos.meta, np.zeros(MAX_MOVES, dtype=np.int32))
print(time.perf_counter() - start)
"""


@dataclass(frozen=True)
class Measurement:
    depth: int
    nodes: int
    seconds: float

    @property
    def nps(self) -> float:
        return self.nodes / self.seconds


def _python_chess_perft(board: chess.Board, depth: int) -> int:
    """python-chess perft playing every leaf, like the engine's benchmark."""
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += 1 if depth == 1 else _python_chess_perft(board, depth - 1)
        board.pop()
    return total


def measure_engine(fen: str, depth: int) -> Measurement:
    pos = Position.from_fen(fen)
    perft(*pos.arrays, 2)  # compile (or load) before timing
    runs = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        nodes = perft(*pos.arrays, depth)
        runs.append(Measurement(depth, nodes, time.perf_counter() - start))
    return min(runs, key=lambda run: run.seconds)


def measure_python_chess(fen: str, depth: int) -> Measurement:
    board = chess.Board(fen)
    runs = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        nodes = _python_chess_perft(board, depth)
        runs.append(Measurement(depth, nodes, time.perf_counter() - start))
    return min(runs, key=lambda run: run.seconds)


def start_up_seconds(cache_dir: str) -> float:
    """Wall time of a fresh interpreter that imports and compiles the rules modules."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _WARM_UP], env=env, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-start-up", action="store_true", help="do not measure cold/warm compile times"
    )
    args = parser.parse_args(argv)

    print(f"perft, every leaf made and unmade, best of {REPEATS} (engine vs python-chess)")
    header = f"{'position':<10} {'engine':>28} {'python-chess':>28} {'ratio':>8}"
    print(header)
    worst_nps = float("inf")
    worst_ratio = float("inf")
    for name, fen, depth, py_depth in POSITIONS:
        ours = measure_engine(fen, depth)
        theirs = measure_python_chess(fen, py_depth)
        ratio = ours.nps / theirs.nps
        worst_nps = min(worst_nps, ours.nps)
        worst_ratio = min(worst_ratio, ratio)
        print(
            f"{name:<10} "
            f"{f'd{ours.depth} {ours.nodes:>9} {ours.nps / 1e6:6.2f} M/s':>28} "
            f"{f'd{theirs.depth} {theirs.nodes:>9} {theirs.nps / 1e6:6.3f} M/s':>28} "
            f"{ratio:7.0f}x"
        )
    met = worst_nps >= TARGET_NPS and worst_ratio >= TARGET_RATIO
    print(
        f"targets: >= {TARGET_NPS / 1e6:.0f} M nodes/s and >= {TARGET_RATIO:.0f}x python-chess: "
        f"{'met' if met else 'NOT met'} (worst {worst_nps / 1e6:.2f} M/s, {worst_ratio:.0f}x)"
    )

    if not args.skip_start_up:
        with tempfile.TemporaryDirectory(prefix="kibitz-numba-cache-") as cache_dir:
            cold_s = start_up_seconds(cache_dir)
            warm_s = start_up_seconds(cache_dir)
        print(f"import + compile, empty numba cache (cold): {cold_s:6.2f} s")
        print(f"import + load from numba cache (warm):      {warm_s:6.2f} s")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
