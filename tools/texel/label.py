"""Label Texel positions with Debian's Stockfish instead of game results.

A game result is one noisy bit shared by every position of the game; a strong engine's
evaluation is a label per position, so far fewer positions fit the weights as well.  Each
position of a ``tools.texel.data`` file is searched to a fixed depth and its score (white's
view) becomes the win probability ``1 / (1 + 10 ** (-cp / 400))``; the tuner fits its own
scale ``K`` on top, so Stockfish's centipawn scale need not be ours.  Mates are 0 or 1.

    python -m tools.texel.label --data /tmp/kibitz-texel.txt --out /tmp/kibitz-texel-sf.txt
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import chess
import chess.engine

from tools.common.engines import REPO_DIR, resolve_engine
from tools.common.scores import MATE_CP
from tools.texel.tune import load


def win_probability(score: chess.engine.PovScore) -> float:
    cp = score.white().score(mate_score=MATE_CP)
    assert cp is not None
    return 1.0 / (1.0 + math.pow(10.0, -max(min(cp, 4000), -4000) / 400.0))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.texel.label", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="positions (FEN [result])")
    parser.add_argument("--out", type=Path, required=True, help="labelled positions")
    parser.add_argument("--engine", default="stockfish", help="labelling engine (UCI)")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--limit", type=int, help="label at most this many positions")
    args = parser.parse_args(argv)
    if args.out.resolve().is_relative_to(REPO_DIR):
        raise SystemExit(f"--out {args.out}: inside the repository; data sets live outside it")
    if not args.data.is_file():
        raise SystemExit(f"--data {args.data}: no such file")
    rows = load(args.data, args.limit)
    spec = resolve_engine(args.engine)
    engine = chess.engine.SimpleEngine.popen_uci(spec.command, cwd=spec.cwd)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        with args.out.open("w") as handle:
            for number, (fen, _) in enumerate(rows, start=1):
                info = engine.analyse(chess.Board(fen), chess.engine.Limit(depth=args.depth))
                score = info.get("score")
                if score is None:
                    continue
                handle.write(f"{fen} [{win_probability(score):.4f}]\n")
                if number % 1000 == 0:
                    print(f"{number} positions labelled", flush=True)
    finally:
        engine.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
