"""Texel tuning data: quiet positions from self-play at fixed nodes, labelled by game results.

Each game starts from one of the match tool's balanced openings followed by a few random
moves (so games differ), and the engine plays both sides in this process with a fixed node
count per move.  A position is kept when it is quiet: the side to move is not in check, the
move the search chose is neither a capture nor a promotion, and the score is no mate.  When
the game ends every kept position is written with its result for white::

    <FEN> [1.0]

Games are appended one at a time, so the run can be stopped at any point.  The file belongs
outside the repository (a data set is generated, not committed).

    python -m tools.texel.data --out /tmp/kibitz-texel.txt --games 2000 --nodes 4000
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.search import warm_up
from tools.common import selfplay
from tools.common.engines import REPO_DIR

RESULT_LABEL = {"1-0": "1.0", "0-1": "0.0", "1/2-1/2": "0.5"}


def play_game(rng: random.Random, nodes: int, random_plies: int) -> tuple[list[str], str]:
    """One self-play game: (quiet positions as FEN, result '1-0' / '0-1' / '1/2-1/2')."""
    kept, result = selfplay.play_game(rng, nodes, random_plies)
    return [board.fen() for board, _ in kept], result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.texel.data", description=__doc__,
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
