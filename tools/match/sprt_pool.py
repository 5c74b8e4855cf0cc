"""Pool the games of several match logs of one SPRT into one test.

On a machine with few cores one SPRT runs as several match processes, one game at a time
each, with books of different seeds (``tools.match.make_openings --seed``).  Each process stops
on its own LLR; this tool reads the game lines they printed, pairs each log's games by
opening (games 2k+1 and 2k+2, whatever order they finished in), and gives the pooled W/L/D,
pentanomial counts, LLR and Elo estimate.  A pair with one game missing (a process stopped
between them) counts in W/L/D but not in the pentanomial::

    python -m tools.match.sprt_pool --sprt 0 10 0.05 0.05 a.log b.log

A test outlives its logs when it goes on on another machine: ``--carried`` adds the counts an
earlier pool printed (W L D and the five pair counts, as recorded beside the candidate net in
``engine/nets/candidates/README.md``), so the new logs, played from the openings after the
ones already used, continue the same test::

    python -m tools.match.sprt_pool --sprt 0 10 0.05 0.05 \
        --carried 518 466 941 43 223 391 250 55 c.log
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.common.referee import Tally, elo_estimate
from tools.common.sprt import ELO_MODELS, SprtSpec, llr

# a game line of tools.match: "game  12 Ruy Lopez  kibitz black: 0-1  (checkmate)  score ..."
GAME_LINE = re.compile(r"^game\s+(\d+)\s.*\s(white|black): (1-0|0-1|1/2-1/2)\s")
RESULT_POINTS = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
LOG_INDEX_OFFSET = 1 << 32


def first_engine_points(colour: str, result: str) -> float:
    """The first engine's points of a game line: its colour ("white" or "black") and the
    result ("1-0", "0-1" or "1/2-1/2")."""
    white_points = RESULT_POINTS[result]
    return white_points if colour == "white" else 1.0 - white_points


def engine1_points(lines: Iterable[str]) -> dict[int, float]:
    """Game number -> the first engine's points, from one log's game lines."""
    points: dict[int, float] = {}
    for line in lines:
        match = GAME_LINE.match(line)
        if match is None:
            continue
        number, colour, result = match.groups()
        points[int(number)] = first_engine_points(colour, result)
    return points


def pool(logs: Iterable[dict[int, float]]) -> Tally:
    """W/L/D over every game and the pentanomial over every complete pair of every log."""
    tally = Tally()
    for log_number, points in enumerate(logs):
        for number, value in points.items():
            # each log's games get indices of their own (the offset is even: pairs stay pairs)
            tally.count(log_number * LOG_INDEX_OFFSET + number - 1, value)
    return tally


def carry(tally: Tally, counts: Sequence[int]) -> None:
    """Add an earlier pool's counts (W, L, D, then [LL, LD, DD+WL, WD, WW]) to ``tally``;
    ValueError names what cannot be such a pool."""
    if len(counts) != 8:
        raise ValueError(f"--carried takes 8 counts (W L D LL LD DD+WL WD WW), not {len(counts)}")
    if any(n < 0 for n in counts):
        raise ValueError(f"--carried counts cannot be negative: {' '.join(map(str, counts))}")
    wins, losses, draws, *pairs = counts
    games = wins + losses + draws
    if 2 * sum(pairs) > games:
        raise ValueError(f"--carried: {sum(pairs)} pairs need {2 * sum(pairs)} games, "
                         f"W L D count {games}")
    # the pairs' points cannot exceed the points of all the games (each pair: 0 .. 2 points)
    pair_points = sum(index * n for index, n in enumerate(pairs)) / 2
    unpaired = games - 2 * sum(pairs)
    points = wins + draws / 2
    if not pair_points - 1e-9 <= points <= pair_points + unpaired + 1e-9:
        raise ValueError(f"--carried: W {wins} L {losses} D {draws} ({points:g} points) cannot "
                         f"hold pairs worth {pair_points:g} points and {unpaired} lone games")
    tally.wins += wins
    tally.losses += losses
    tally.draws += draws
    tally.pentanomial = [a + b for a, b in zip(tally.pentanomial, pairs, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.match.sprt_pool", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", type=Path, nargs="*", help="the match logs of one test")
    parser.add_argument("--sprt", type=float, nargs=4, required=True,
                        metavar=("ELO0", "ELO1", "ALPHA", "BETA"), help="the test's bounds")
    parser.add_argument("--elo-model", choices=ELO_MODELS, default="normalized")
    parser.add_argument("--carried", type=int, nargs=8, metavar="N",
                        help="an earlier pool of the same test, its logs gone: W L D and the "
                             "pair counts LL LD DD+WL WD WW")
    args = parser.parse_args(argv)
    try:
        elo0, elo1, alpha, beta = args.sprt
        spec = SprtSpec(elo0, elo1, alpha, beta, args.elo_model)
    except ValueError as error:
        parser.error(str(error))
    logs = []
    for path in args.logs:
        try:
            logs.append(engine1_points(path.read_text().splitlines()))
        except OSError as error:
            parser.error(f"cannot read {path}: {error.strerror}")
    if not logs and args.carried is None:
        parser.error("give the match logs of the test, or --carried counts, or both")
    tally = pool(logs)
    if args.carried is not None:
        try:
            carry(tally, args.carried)
        except ValueError as error:
            parser.error(str(error))
    if tally.games == 0:
        parser.error("no game lines in the logs")
    value = llr(tally.pentanomial, spec.elo0, spec.elo1, spec.model)
    verdict = spec.verdict(value)
    outcome = {"H1": "H1 accepted: passed", "H0": "H0 accepted: failed"}.get(
        verdict or "", "no verdict yet: within the bounds")
    pairs = ", ".join(str(n) for n in tally.pentanomial)
    elo, low, high = elo_estimate(tally.wins, tally.draws, tally.losses)
    carried = "" if args.carried is None else " and the carried counts"
    print("\n".join([
        spec.describe(),
        f"LLR {value:+.2f} ({spec.lower_bound:+.2f}, {spec.upper_bound:+.2f}): {outcome}",
        f"games {tally.games} from {len(logs)} logs{carried}: W {tally.wins} L {tally.losses} "
        f"D {tally.draws}; pentanomial [LL, LD, DD+WL, WD, WW] [{pairs}]",
        f"Elo {elo:+.1f} (95% {low:+.1f} .. {high:+.1f})",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
