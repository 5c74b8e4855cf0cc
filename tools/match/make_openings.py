"""A book of balanced start positions for long matches and SPRT runs.

The match tool's 32 named openings repeat every 64 games, so an SPRT of a thousand games or
more plays each of them dozens of times and its games are far from independent.  This tool
widens them: each position is one of the named openings followed by a few random legal
plies, kept only when a short search by the built-in engine finds it balanced (no mate, the
score within ``--max-cp``) and it is new.  The check searches with the hand-written evaluation,
never a net: a seed's book is then the same file whatever net is the default, on any machine,
so a match from it compares with every earlier one from the same seed (with a net as the
check, a new default would change most of the book).  One FEN per line, in a seeded, shuffled
order::

    python -m tools.match.make_openings --out /tmp/book.epd --count 4000
    python -m tools.match --openings /tmp/book.epd ...

Two match processes that share the work of one test (one core each) take different books:
``--seed``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import chess

from engine.board import Position
from engine.params import MATE_BOUND
from engine.search import Searcher, warm_up
from engine.timeman import GoLimits, TimeBudget
from tools.common.openings import random_opening

HASH_MB = 8
UNLIMITED = TimeBudget(None, None)


def balanced_score_cp(searcher: Searcher, board: chess.Board, depth: int) -> int | None:
    """The engine's score of ``board`` for the side to move at ``depth``, None for a mate."""
    searcher.clear()
    result = searcher.think(
        Position.from_fen(board.fen()), GoLimits(depth=depth), UNLIMITED, time.monotonic(),
        lambda _: None,
    )
    if result.best_move is None or abs(result.score) >= MATE_BOUND:
        return None
    return result.score


def make_book(count: int, seed: int, plies: int, depth: int, max_cp: int) -> list[str]:
    rng = random.Random(seed)
    searcher = Searcher(HASH_MB)  # no net: the hand-written evaluation (the module's docstring)
    seen: set[str] = set()
    book: list[str] = []
    while len(book) < count:
        board = random_opening(rng, plies)
        if board.is_game_over():
            continue
        key = board.epd()
        if key in seen:
            continue
        seen.add(key)
        score = balanced_score_cp(searcher, board, depth)
        if score is None or abs(score) > max_cp:
            continue
        book.append(board.fen())
    return book


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.match.make_openings",
                                     description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="the book to write")
    parser.add_argument("--count", type=int, default=4000, help="positions (default 4000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--plies", type=int, default=4,
                        help="random plies after the named opening (default 4)")
    parser.add_argument("--depth", type=int, default=6, help="search depth of the check")
    parser.add_argument("--max-cp", type=int, default=80,
                        help="keep positions scored within this (default 80)")
    args = parser.parse_args(argv)
    if args.count < 1 or args.plies < 0 or args.depth < 1 or args.max_cp < 0:
        parser.error("--count and --depth must be positive, --plies and --max-cp not negative")
    warm_up()
    book = make_book(args.count, args.seed, args.plies, args.depth, args.max_cp)
    args.out.write_text("".join(f"{fen}\n" for fen in book))
    print(f"{len(book)} positions written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
