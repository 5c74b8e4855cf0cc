"""Texel tuning data: quiet positions from self-play at fixed nodes, labelled by game results.

Each game starts from one of the match tool's balanced openings followed by a few random
moves (so games differ), and the engine plays both sides in this process with a fixed node
count per move.  A position is kept when it is quiet: the side to move is not in check, the
move the search chose is neither a capture nor a promotion, and the score is no mate.  When
the game ends every kept position is written with its result for white::

    <FEN> [1.0]

Games are appended one at a time, so the run can be stopped at any point.  The file belongs
outside the repository (a data set is generated, not committed).

    python -m tools.texel_data --out /tmp/kibitz-texel.txt --games 2000 --nodes 4000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import chess

from engine import params
from engine.board import Position
from engine.search import Searcher, warm_up
from engine.timeman import GoLimits, TimeBudget
from tools.match import REPO_DIR, random_opening

SKIP_PLIES = 8  # the first plies after the opening are not sampled (still book-like)
WIN_CP = 1000  # a game whose scores stay beyond this for WIN_PLIES plies is adjudicated won
WIN_PLIES = 6
MAX_PLIES = 300  # a game still running after this many plies is a draw
HASH_MB = 16
RESULT_LABEL = {"1-0": "1.0", "0-1": "0.0", "1/2-1/2": "0.5"}


def play_game(rng: random.Random, nodes: int, random_plies: int) -> tuple[list[str], str]:
    """One self-play game: (quiet positions as FEN, result '1-0' / '0-1' / '1/2-1/2')."""
    board = random_opening(rng, random_plies)
    searcher = Searcher(HASH_MB)
    limits = GoLimits(nodes=nodes)
    kept: list[str] = []
    white_scores: list[int] = []
    start_ply = board.ply()
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            return kept, outcome.result()
        if board.ply() - start_ply >= MAX_PLIES:
            return kept, "1/2-1/2"
        position = Position.from_fen(board.fen())
        result = searcher.think(position, limits, TimeBudget(None, None), time.monotonic(),
                                lambda _: None)
        if result.best_move is None:
            raise RuntimeError(f"the engine found no move in {board.fen()}")
        move = chess.Move.from_uci(result.best_move)
        quiet = (not board.is_check() and not board.is_capture(move)
                 and move.promotion is None and abs(result.score) < params.MATE_BOUND)
        if quiet and board.ply() - start_ply >= SKIP_PLIES:
            kept.append(board.fen())
        white_scores.append(result.score if board.turn == chess.WHITE else -result.score)
        recent = white_scores[-WIN_PLIES:]
        if len(recent) == WIN_PLIES and all(s >= WIN_CP for s in recent):
            return kept, "1-0"
        if len(recent) == WIN_PLIES and all(s <= -WIN_CP for s in recent):
            return kept, "0-1"
        board.push(move)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.texel_data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="file the positions go to")
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=4000, help="nodes per move")
    parser.add_argument("--random-plies", type=int, default=4,
                        help="random moves after the opening (default 4)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.games < 1 or args.nodes < 1 or args.random_plies < 0:
        raise SystemExit("--games and --nodes must be positive, --random-plies at least 0")
    out = args.out.resolve()
    if out.is_relative_to(REPO_DIR):
        raise SystemExit(f"--out {args.out}: inside the repository; data sets live outside it")
    out.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    warm_up()
    positions = 0
    with out.open("a") as handle:
        for number in range(1, args.games + 1):
            kept, result = play_game(rng, args.nodes, args.random_plies)
            for fen in kept:
                handle.write(f"{fen} [{RESULT_LABEL[result]}]\n")
            handle.flush()
            positions += len(kept)
            print(f"game {number}: {result}, {len(kept)} positions ({positions} in all)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
