"""Positions searched afresh by engines at a node count: what each engine sees in them.

Every engine searches every position of an EPD file from an empty table (a new game before
each) at ``--nodes``, and the tool prints, engine by engine, the median score from the side
to move's view, how many positions it scores ``--cp`` or more, and how many 0 or less.  The
positions an opponent claimed first in a match (``tools.match.claims --epd``) are the use it
was made for: whether a net sees the advantages a stronger engine saw, set beside another
engine's reading of the same positions::

    python -m tools.match.claims match.pgn --epd claims.epd
    python -m tools.strength.rescore claims.epd --engine kibitz --engine stockfish \\
        --nodes 2000000

An engine is an alias of ``tools.match`` (``kibitz``, ``stockfish``, ``kibitz@REV``, ...) or a
command line.  ``--option N:NAME=VALUE`` sets a UCI option of the N-th ``--engine``, so two nets
of one engine are compared as ``--engine kibitz --engine kibitz --option 2:EvalFile=NET``.
A mate counts as ``MATE_CP`` less its distance.  An engine that gives no move within
``--timeout-s`` is killed and named.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine

from tools.common.engines import check_installed, make_spec, open_engine, search_fresh
from tools.common.openings import load_openings
from tools.common.referee import parse_option
from tools.common.scores import MATE_CP

DEFAULT_HASH_MB = 64
DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Reading:
    """One engine's scores of the positions, side to move's view, in centipawns."""

    engine: str
    scores_cp: tuple[int, ...]

    def line(self, cp: int) -> str:
        median = statistics.median(self.scores_cp)
        return (f"{self.engine}: {len(self.scores_cp)} positions, median {median / 100:+.2f}, "
                f"{sum(1 for s in self.scores_cp if s >= cp)} at {cp / 100:+.2f} or more, "
                f"{sum(1 for s in self.scores_cp if s <= 0)} at 0 or less")


def search_all(engine_text: str, options: dict[str, str], boards: Sequence[chess.Board],
               nodes: int, timeout_s: float) -> Reading:
    """``engine_text``'s score of each position, each searched from an empty table."""
    spec = make_spec(engine_text, None, None, list(options.items()), False)
    check_installed(spec)
    engine = open_engine(spec)
    try:
        if "Hash" in engine.options and "Hash" not in options:
            engine.configure({"Hash": DEFAULT_HASH_MB})
        scores = []
        for board in boards:
            found = search_fresh(engine, engine_text, board, nodes, timeout_s)
            score = found.info.get("score")
            if score is None:
                raise SystemExit(f"engine {engine_text!r} gave no score in {board.fen()}")
            scores.append(int(score.pov(board.turn).score(mate_score=MATE_CP)))
    finally:
        # one the watchdog killed has nothing left to quit
        with contextlib.suppress(chess.engine.EngineError, chess.engine.EngineTerminatedError):
            engine.quit()
    label = " ".join([engine_text, *(f"{name}={value}" for name, value in options.items())])
    return Reading(label, tuple(scores))


def engine_options(given: Sequence[str], engines: int) -> list[dict[str, str]]:
    """``N:NAME=VALUE`` settings by engine (N from 1); a bad one is refused by its text."""
    options: list[dict[str, str]] = [{} for _ in range(engines)]
    for text in given:
        index, sep, setting = text.partition(":")
        if not sep or not index.isdigit() or not 1 <= int(index) <= engines:
            raise SystemExit(f"--option {text!r}: give N:NAME=VALUE, N the engine's place "
                             f"among the {engines} --engine (from 1)")
        try:
            name, value = parse_option(setting)
        except argparse.ArgumentTypeError as exc:
            raise SystemExit(f"--option {text!r}: {exc}") from None
        options[int(index) - 1][name] = value
    return options


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.strength.rescore",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("epd", type=Path, help="the positions, one FEN or EPD a line (as a "
                        "match's book)")
    parser.add_argument("--engine", action="append", default=[],
                        help="an engine (an alias or a command line; repeatable; default kibitz)")
    parser.add_argument("--option", action="append", default=[], metavar="N:NAME=VALUE",
                        help="a UCI option of the N-th --engine (repeatable)")
    parser.add_argument("--nodes", type=int, default=2_000_000,
                        help="nodes a search (default 2,000,000)")
    parser.add_argument("--cp", type=int, default=50,
                        help="the score a position counts from, in centipawns (default 50)")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
                        help="an engine silent this long on one position is killed")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.timeout_s <= 0:
        parser.error("--nodes and --timeout-s must be positive")
    if not args.epd.is_file():
        parser.error(f"{args.epd}: no such file")
    engines = args.engine or ["kibitz"]
    options = engine_options(args.option, len(engines))
    boards = [chess.Board(opening.fen) for opening in load_openings(args.epd)]
    for engine, settings in zip(engines, options, strict=True):
        reading = search_all(engine, settings, boards, args.nodes, args.timeout_s)
        print(reading.line(args.cp), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
