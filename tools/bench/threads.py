"""Search speed by thread count: fixed-time searches of bench positions, in alternating rounds.

``python -m tools.bench.threads [--threads 1 2] [--rounds 3] [--movetime-ms 5000]``: every
round searches the same positions for ``movetime`` each with every thread count in turn (the
shipped net, an empty table per position), so a machine whose load drifts disturbs every
count alike.  Per run it prints nodes per second, the cores the process kept busy (CPU time
over wall time: two threads that waited on each other, for the GIL say, stay near 1.0) and
each thread's own nodes per second; then the mean of every count and its ratio to the first.
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass

from engine.bench import BENCH_FENS
from engine.board import Position
from engine.nnue import net_for
from engine.params import DEFAULT_EVAL_FILE
from engine.search import Searcher, warm_up
from engine.threads import I_NODES
from engine.timeman import GoLimits, TimeBudget

HASH_MB = 64
# an opening, two middle games, a tactical position and an ending of the bench set
POSITIONS = (BENCH_FENS[0], BENCH_FENS[8], BENCH_FENS[11], BENCH_FENS[20], BENCH_FENS[33])


@dataclass(frozen=True)
class Run:
    threads: int
    nodes: int
    wall_s: float
    cpu_s: float
    thread_nodes: tuple[int, ...]

    @property
    def nps(self) -> float:
        return self.nodes / self.wall_s

    @property
    def cores(self) -> float:
        return self.cpu_s / self.wall_s


def measure(threads: int, movetime_ms: int) -> Run:
    """Search every position for ``movetime_ms`` with ``threads`` threads."""
    searcher = Searcher(HASH_MB, threads)
    searcher.set_net(net_for(DEFAULT_EVAL_FILE))
    nodes = 0
    wall_s = cpu_s = 0.0
    thread_nodes = [0] * threads
    for fen in POSITIONS:
        searcher.clear()
        searcher.stop[0] = 0
        timer = threading.Timer(movetime_ms / 1000, searcher.request_stop)
        started_s, cpu_started_s = time.monotonic(), time.process_time()
        timer.start()
        result = searcher.think(Position.from_fen(fen), GoLimits(infinite=True),
                                TimeBudget(None, None), started_s, lambda _: None)
        wall_s += time.monotonic() - started_s
        cpu_s += time.process_time() - cpu_started_s
        timer.join()
        nodes += result.nodes
        for index, tables in enumerate(searcher.pool.all_tables()):
            thread_nodes[index] += int(tables.info[I_NODES])
    return Run(threads, nodes, wall_s, cpu_s, tuple(thread_nodes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--movetime-ms", type=int, default=5000)
    args = parser.parse_args()
    if any(count < 1 for count in args.threads):
        parser.error(f"--threads: every count must be at least 1, got {args.threads}")
    warm_up(net_for(DEFAULT_EVAL_FILE))
    runs: dict[int, list[Run]] = {count: [] for count in args.threads}
    for number in range(1, args.rounds + 1):
        for count in args.threads:
            run = measure(count, args.movetime_ms)
            runs[count].append(run)
            per_thread = " ".join(f"{n / run.wall_s:,.0f}" for n in run.thread_nodes)
            print(f"round {number} threads {count}: {run.nodes:,} nodes in {run.wall_s:.1f} s, "
                  f"{run.nps:,.0f} nodes/s, {run.cores:.2f} cores busy, "
                  f"per thread {per_thread} nodes/s", flush=True)
    base = sum(run.nps for run in runs[args.threads[0]]) / args.rounds
    for count, done in runs.items():
        mean = sum(run.nps for run in done) / args.rounds
        cores = sum(run.cores for run in done) / args.rounds
        print(f"threads {count}: mean {mean:,.0f} nodes/s ({mean / base:.2f}x threads "
              f"{args.threads[0]}), {cores:.2f} cores busy")


if __name__ == "__main__":
    main()
