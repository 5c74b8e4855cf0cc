"""Nodes per second of UCI engines in searches as in play, in alternating rounds.

``python -m tools.bench.uci_speed [--engine kibitz --engine ethereal-chess] [--rounds 3]
[--movetime-ms 300] [--hash-mb 16]``: every round, each engine in turn searches every bench
position for ``movetime`` from an empty table (``ucinewgame``), as it would search a move of a
game, so a machine whose load drifts disturbs every engine alike.  An engine's speed is the
nodes over the time of its own last ``info`` line of each search, summed over the positions:
the same count as its ``bench``, but over the same positions and the same time for every
engine, where each engine's ``bench`` has positions and a depth of its own.  The depth of
that last line, averaged over the positions, says how far each engine's tree reached in the
same time: at even nodes per second, a lower depth is a wider tree.  Engines are aliases of
``tools.match`` (``kibitz``, ``kibitz@REV``, ``ethereal-chess``, ...) or command lines.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import chess
import chess.engine

from engine.bench import BENCH_FENS
from tools.match.engines import EngineSpec, check_installed, open_engine, resolve_engine

DEFAULT_ENGINES = ("kibitz", "ethereal-chess")


@dataclass(frozen=True)
class Run:
    """One engine's searches of every position in one round."""

    name: str
    nodes: int
    time_ms: int
    depth_sum: int  # the depths of the last info lines, summed over the bench positions

    @property
    def nps(self) -> float:
        return self.nodes * 1000 / max(self.time_ms, 1)

    @property
    def mean_depth(self) -> float:
        return self.depth_sum / len(BENCH_FENS)


def measure(spec: EngineSpec, movetime_ms: int, hash_mb: int) -> Run:
    """Search every bench position for ``movetime_ms`` from an empty table."""
    engine = open_engine(spec)
    nodes = time_ms = depth_sum = 0
    try:
        engine.configure({"Hash": hash_mb})
        for fen in BENCH_FENS:
            # a new game object makes python-chess send ``ucinewgame``: an empty table
            result = engine.play(chess.Board(fen), chess.engine.Limit(time=movetime_ms / 1000),
                                 info=chess.engine.INFO_BASIC, game=object())
            searched = result.info.get("nodes")
            took_s = result.info.get("time")
            depth = result.info.get("depth")
            if searched is None or took_s is None or depth is None:
                raise SystemExit(f"engine {spec.name!r}: no nodes, time and depth in its last "
                                 f"info line for {fen}")
            nodes += int(searched)
            time_ms += round(float(took_s) * 1000)
            depth_sum += int(depth)
    finally:
        engine.quit()
    return Run(spec.name, nodes, time_ms, depth_sum)


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
    runs: dict[str, list[Run]] = {spec.name: [] for spec in specs}
    for number in range(1, args.rounds + 1):
        for spec in specs:
            run = measure(spec, args.movetime_ms, args.hash_mb)
            runs[spec.name].append(run)
            print(f"round {number} {spec.name}: {run.nodes:,} nodes in {run.time_ms:,} ms, "
                  f"{run.nps:,.0f} nodes/s, mean depth {run.mean_depth:.2f}", flush=True)
        first = runs[specs[0].name][-1].nps
        ratios = ", ".join(f"{spec.name} {runs[spec.name][-1].nps / first:.2f}x"
                           for spec in specs[1:])
        if ratios:
            print(f"round {number} against {specs[0].name}: {ratios}", flush=True)
    base = sum(run.nps for run in runs[specs[0].name]) / args.rounds
    for name, done in runs.items():
        mean = sum(run.nps for run in done) / args.rounds
        depth = sum(run.mean_depth for run in done) / args.rounds
        print(f"{name}: mean {mean:,.0f} nodes/s ({mean / base:.2f}x {specs[0].name}), "
              f"mean depth {depth:.2f}")


if __name__ == "__main__":
    main()
