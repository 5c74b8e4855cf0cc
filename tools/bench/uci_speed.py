"""Nodes per second of UCI engines in searches as in play, in alternating rounds.

``python -m tools.bench.uci_speed [--engine kibitz --engine ethereal-chess] [--rounds 3]
[--movetime-ms 300] [--hash-mb 16]``: every round, each engine in turn searches every bench
position for ``movetime`` from an empty table (``ucinewgame``), as it would search a move of a
game, so a machine whose load drifts disturbs every engine alike.  An engine's speed is the
nodes over the time of its own last ``info`` line of each search, summed over the positions:
the same count as its ``bench``, but over the same positions and the same time for every
engine, where each engine's ``bench`` has positions and a depth of its own.  The depth of
that last line, averaged over the positions, says how far an engine's tree reached in the
same time; it compares builds of one engine, not engines, whose depths count differently
(internal iterative reduction alone makes a nominal ply cheaper).

The summary of all rounds is repeated for the openings and middle games and for the end games
alone (``BENCH_ENDGAMES_FROM``): a learned evaluation costs the same at every node while a
hand-written one gets cheaper as pieces leave the board, so the two parts differ.

Both figures leave out every position that any engine scored as a mate in any round: there
one engine stops at once (Kibitz, with plies to spare) where another searches on to its
maximum depth (Ethereal reports 127) at the speed of a near-empty board, so neither its speed
nor its depth there says anything of the others'.  Engines are aliases of ``tools.match``
(``kibitz``, ``kibitz@REV``, ``ethereal-chess``, ...) or command lines.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import chess
import chess.engine

from engine.bench import BENCH_ENDGAMES_FROM, BENCH_FENS
from tools.common.engines import EngineSpec, check_installed, open_engine, resolve_engine

DEFAULT_ENGINES = ("kibitz", "ethereal-chess")


@dataclass(frozen=True)
class Search:
    """One engine's search of one position, as its last ``info`` line tells it."""

    nodes: int
    time_ms: int
    depth: int
    mate: bool  # the score was a mate


@dataclass(frozen=True)
class Run:
    """One engine's searches of every bench position (in order) in one round."""

    name: str
    searches: tuple[Search, ...]

    def nps(self, positions: Sequence[int]) -> float:
        """Nodes per second over the searches of ``positions`` (indexes)."""
        nodes = sum(self.searches[i].nodes for i in positions)
        time_ms = sum(self.searches[i].time_ms for i in positions)
        return nodes * 1000 / max(time_ms, 1)

    def mean_depth(self, positions: Sequence[int]) -> float:
        return sum(self.searches[i].depth for i in positions) / max(len(positions), 1)


def without_mates(runs: Iterable[Run]) -> tuple[int, ...]:
    """The indexes of the bench positions that no run scored as a mate."""
    mated: set[int] = set()
    for run in runs:
        mated.update(i for i, search in enumerate(run.searches) if search.mate)
    return tuple(i for i in range(len(BENCH_FENS)) if i not in mated)


def measure(spec: EngineSpec, movetime_ms: int, hash_mb: int) -> Run:
    """Search every bench position for ``movetime_ms`` from an empty table."""
    engine = open_engine(spec)
    searches: list[Search] = []
    try:
        engine.configure({"Hash": hash_mb})
        for fen in BENCH_FENS:
            # a new game object makes python-chess send ``ucinewgame``: an empty table
            result = engine.play(chess.Board(fen), chess.engine.Limit(time=movetime_ms / 1000),
                                 info=chess.engine.INFO_BASIC | chess.engine.INFO_SCORE,
                                 game=object())
            searched = result.info.get("nodes")
            took_s = result.info.get("time")
            depth = result.info.get("depth")
            score = result.info.get("score")
            if searched is None or took_s is None or depth is None or score is None:
                raise SystemExit(f"engine {spec.name!r}: no nodes, time, depth and score in "
                                 f"its last info line for {fen}")
            searches.append(Search(int(searched), round(float(took_s) * 1000), int(depth),
                                   score.is_mate()))
    finally:
        engine.quit()
    return Run(spec.name, tuple(searches))


def by_phase(positions: Sequence[int]) -> list[tuple[str, tuple[int, ...]]]:
    """``positions`` split into the bench's openings and middle games and its end games
    (``BENCH_ENDGAMES_FROM``), each part with its label; a part left empty is left out."""
    parts = [("openings and middle games", tuple(i for i in positions if i < BENCH_ENDGAMES_FROM)),
             ("end games", tuple(i for i in positions if i >= BENCH_ENDGAMES_FROM))]
    return [(label, part) for label, part in parts if part]


def summary(runs: Sequence[Run], positions: Sequence[int]) -> list[str]:
    """One line per engine: its nodes/s and mean depth over ``positions``, averaged over its
    runs, and its speed against the first engine's."""
    if not positions:
        raise SystemExit("every bench position was scored as a mate by some engine: "
                         "no search is left to compare")
    names = list(dict.fromkeys(run.name for run in runs))
    mean_nps = {}
    lines = []
    for name in names:
        own = [run for run in runs if run.name == name]
        mean_nps[name] = sum(run.nps(positions) for run in own) / len(own)
        depth = sum(run.mean_depth(positions) for run in own) / len(own)
        lines.append(f"{name}: {mean_nps[name]:,.0f} nodes/s "
                     f"({mean_nps[name] / mean_nps[names[0]]:.2f}x {names[0]}), "
                     f"mean depth {depth:.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", dest="engines",
                        help=f"an engine (repeat; default: {' and '.join(DEFAULT_ENGINES)})")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--movetime-ms", type=int, default=300)
    parser.add_argument("--hash-mb", type=int, default=16)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.movetime_ms < 1:
        parser.error(f"--movetime-ms must be at least 1, got {args.movetime_ms}")
    if args.hash_mb < 1:
        parser.error(f"--hash-mb must be at least 1, got {args.hash_mb}")
    specs = [resolve_engine(text) for text in (args.engines or DEFAULT_ENGINES)]
    for spec in specs:
        check_installed(spec)
    runs: list[Run] = []
    for number in range(1, args.rounds + 1):
        this_round = [measure(spec, args.movetime_ms, args.hash_mb) for spec in specs]
        runs.extend(this_round)
        positions = without_mates(this_round)
        print(f"round {number}, {len(positions)} of {len(BENCH_FENS)} positions without a "
              "mate score:", flush=True)
        for line in summary(this_round, positions):
            print(f"  {line}", flush=True)
    positions = without_mates(runs)
    print(f"all {args.rounds} rounds, {len(positions)} of {len(BENCH_FENS)} positions without "
          "a mate score in any:")
    for line in summary(runs, positions):
        print(f"  {line}")
    for label, part in by_phase(positions):
        print(f"{label}, {len(part)} of those positions:")
        for line in summary(runs, part):
            print(f"  {line}")


if __name__ == "__main__":
    main()
