"""Set two match logs played from the same book against the same opponent side by side.

Two nets measured against one opponent in two 200-game runs differ by less than either run's
interval (about ±40 Elo each), yet the runs share their openings: game 2k+1 and 2k+2 of both
play opening k+1, one with each colour.  Compared opening by opening, the openings' own luck
(a line that is lost for one colour whoever plays it) cancels, and what is left is the
difference between the two first engines (how much that narrows the interval depends on how
alike the two runs' games stay; the interval the runs would give apart is printed beside it).
This tool reads the game lines of two ``tools.match`` logs, keeps the pairs both logs
finished, checks that each game started from the same opening in both, and prints each log's
score on those pairs, the difference per game with its 95% interval (from the spread of the
pairs' differences), and the same in Elo::

    python -m tools.match.compare new.log old.log

The opening of a game line is the field ``tools.match`` pads to 24 characters; a label longer
than that and holding a space is read up to that space (both logs alike).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.common.referee import Z_95, elo_of_score_difference
from tools.match.sprt_pool import first_engine_points

# "game  12 book1.epd:6              kibitz-12 black: 0-1     (adjudication)  score ..."
GAME_LINE = re.compile(r"^game\s+(\d+) (.{24,}?) .+ (white|black): (1-0|0-1|1/2-1/2)\s")


class LogMismatch(ValueError):
    """Two logs that did not play the same openings in the same games."""


@dataclass(frozen=True)
class Game:
    opening: str
    points: float  # the first engine's


@dataclass(frozen=True)
class Comparison:
    """Two logs on the game pairs both finished: each one's points, and the difference."""

    pairs: int
    points_a: float
    points_b: float
    better_a: int  # pairs where log A's engine scored more
    better_b: int
    same: int
    diff_per_game: float  # (A - B) / games, as a share of a point
    margin_per_game: float  # half the 95% interval of ``diff_per_game``
    unpaired_margin_per_game: float  # the same, were the runs' pairs unrelated

    @property
    def games(self) -> int:
        return 2 * self.pairs

    @property
    def score_a(self) -> float:
        return self.points_a / self.games

    @property
    def score_b(self) -> float:
        return self.points_b / self.games

    def elo_difference(self) -> tuple[float, float, float]:
        """A's Elo minus B's, with its 95% interval: the score difference spread evenly about
        the two runs' mean score, where the Elo curve is read."""
        middle = (self.score_a + self.score_b) / 2
        return (elo_of_score_difference(self.diff_per_game, middle),
                elo_of_score_difference(self.diff_per_game - self.margin_per_game, middle),
                elo_of_score_difference(self.diff_per_game + self.margin_per_game, middle))


def read_games(lines: Iterable[str]) -> dict[int, Game]:
    """Game number -> its opening and the first engine's points, from a log's game lines."""
    games: dict[int, Game] = {}
    for line in lines:
        match = GAME_LINE.match(line)
        if match is None:
            continue
        number, opening, colour, result = match.groups()
        games[int(number)] = Game(opening.rstrip(), first_engine_points(colour, result))
    return games


def compare(a: dict[int, Game], b: dict[int, Game]) -> Comparison:
    """The pairs (games 2k+1, 2k+2) that both logs finished, A against B; ``LogMismatch``
    when a game of those started from different openings, or none is shared."""
    for number in sorted(a.keys() & b.keys()):
        if a[number].opening != b[number].opening:
            raise LogMismatch(f"game {number} started from {a[number].opening!r} in one log "
                              f"and from {b[number].opening!r} in the other: the logs did not "
                              "play the same book in the same order")
    diffs: list[float] = []
    pairs_a: list[float] = []
    pairs_b: list[float] = []
    for first in range(1, max(a.keys() | b.keys(), default=0) + 1, 2):
        pair = (first, first + 1)
        if not all(n in a and n in b for n in pair):
            continue
        pair_a = sum(a[n].points for n in pair)
        pair_b = sum(b[n].points for n in pair)
        pairs_a.append(pair_a)
        pairs_b.append(pair_b)
        diffs.append(pair_a - pair_b)
    if not diffs:
        raise LogMismatch("the logs have no game pair that both finished")
    count = len(diffs)
    mean = sum(diffs) / count
    unpaired = math.sqrt(_variance(pairs_a) + _variance(pairs_b))
    return Comparison(
        pairs=count, points_a=sum(pairs_a), points_b=sum(pairs_b),
        better_a=sum(1 for d in diffs if d > 0), better_b=sum(1 for d in diffs if d < 0),
        same=sum(1 for d in diffs if d == 0),
        diff_per_game=mean / 2,
        margin_per_game=Z_95 * math.sqrt(_variance(diffs)) / math.sqrt(count) / 2,
        unpaired_margin_per_game=Z_95 * unpaired / math.sqrt(count) / 2,
    )


def _variance(values: Sequence[float]) -> float:
    """The sample variance; for one value the widest a pair's difference allows (2 points
    either way), so that one pair gives no narrow interval."""
    if len(values) < 2:
        return 4.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def report(result: Comparison, name_a: str, name_b: str) -> str:
    elo, low, high = result.elo_difference()
    return "\n".join([
        f"{result.pairs} game pairs ({result.games} games) finished in both logs",
        f"A {name_a}: {result.points_a:g}/{result.games} ({100 * result.score_a:.1f}%)",
        f"B {name_b}: {result.points_b:g}/{result.games} ({100 * result.score_b:.1f}%)",
        f"A - B: {100 * result.diff_per_game:+.1f}% a game "
        f"(95% {100 * (result.diff_per_game - result.margin_per_game):+.1f} .. "
        f"{100 * (result.diff_per_game + result.margin_per_game):+.1f}), "
        f"Elo {elo:+.0f} (95% {low:+.0f} .. {high:+.0f}); "
        f"apart, the runs' intervals would give ±{100 * result.unpaired_margin_per_game:.1f}%",
        f"pairs: A better {result.better_a}, B better {result.better_b}, "
        f"the same {result.same}",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.match.compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path, help="a match log (its first engine is A)")
    parser.add_argument("b", type=Path, help="the log to set it against (same book, same "
                                             "opponent)")
    args = parser.parse_args(argv)
    logs = []
    for path in (args.a, args.b):
        try:
            logs.append(read_games(path.read_text().splitlines()))
        except OSError as error:
            parser.error(f"cannot read {path}: {error.strerror}")
    for path, games in zip((args.a, args.b), logs, strict=True):
        if not games:
            parser.error(f"{path}: no game lines of tools.match")
    try:
        result = compare(*logs)
    except LogMismatch as error:
        parser.error(f"{args.a} and {args.b}: {error}")
    print(report(result, str(args.a), str(args.b)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
