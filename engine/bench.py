"""``kibitz-engine bench [depth] [--threads N]``: a fixed search of fixed positions, for speed
and a signature.

Every position is searched to the same depth from an empty transposition table, so the total
node count depends only on the search and evaluation code: it changes exactly when they change
(record it in commit messages).  Nodes per second measure speed on this machine.  With more
than one thread the node count varies from run to run (the threads race through the shared
table): it is the signature only with one.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from engine.board import Position
from engine.nnue import Net
from engine.search import Searcher, warm_up
from engine.timeman import GoLimits, TimeBudget

DEFAULT_DEPTH = 10
BENCH_HASH_MB = 16
# BENCH_FENS from this index on are the end games (tools.bench.uci_speed reports them apart:
# a net costs the same at every node, a hand-written evaluation less as pieces leave)
BENCH_ENDGAMES_FROM = 26

BENCH_FENS: tuple[str, ...] = (
    # openings and early middle games
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",
    "rnbqkb1r/pp2pppp/3p1n2/8/3NP3/2N5/PPP2PPP/R1BQKB1R b KQkq - 2 5",
    "rnbqkb1r/ppp2ppp/4pn2/3p4/2PP4/2N5/PP2PPPP/R1BQKBNR w KQkq - 2 4",
    "rnbqk2r/ppp1ppbp/3p1np1/8/2PPP3/2N5/PP3PPP/R1BQKBNR w KQkq - 1 5",
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
    "rnbqkbnr/pp1ppppp/8/2p5/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2",
    "r1bq1rk1/ppp2ppp/2np1n2/2b1p3/2B1P3/2PP1N2/PP3PPP/RNBQ1RK1 w - - 1 7",
    # middle games
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 8",
    "2rq1rk1/pb1nbppp/1p2pn2/2pp4/2PP4/1P2PNP1/PB2NPBP/R2Q1RK1 w - - 4 11",
    "r2q1rk1/1p2bppp/p1n1bn2/3p4/3P4/2NBBN2/PP3PPP/R2Q1RK1 w - - 0 12",
    "r1b2rk1/2q1bppp/p2ppn2/1p6/3BP3/2NB1Q2/PPP3PP/R4R1K w - - 0 14",
    "3r1rk1/pp3pp1/2pq1n1p/3p4/3P4/2PBPQ2/P4PPP/R4RK1 w - - 0 18",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "2r2rk1/1bqnbppp/pp1ppn2/8/2PNP3/1PN1BP2/P2QB1PP/2RR2K1 w - - 0 15",
    "r1bqr1k1/pp1n1pbp/2pp1np1/4p3/2PPP3/2N1BP2/PP1QN1PP/R3KB1R w KQ - 2 9",
    "r2qr1k1/1b1nbppp/pp1ppn2/8/2P1P3/1PN1BN2/P2QBPPP/R4RK1 w - - 4 12",
    "rq3rk1/1b1nbppp/p2ppn2/1p6/3NP3/1BN1BP2/PPPQ2PP/2KR3R w - - 0 12",
    "r1b1k2r/pp1nqppp/2p1p3/3p4/2PPn3/2NBPN2/PPQ2PPP/R3K2R w KQkq - 2 10",
    # tactics
    "1k1r4/pp1b1R2/3q2pp/4p3/2B5/4Q3/PPP2B2/2K5 b - - 0 1",
    "r1b1kb1r/pp3ppp/2n1pn2/q1pp4/2PP4/P1N1PN2/1P1B1PPP/R2QKB1R w KQkq - 0 8",
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 1",
    "r1bqk2r/ppp2ppp/2n5/3np3/1bB5/2N2N2/PPPP1PPP/R1BQK2R w KQkq - 0 6",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1",
    # end games
    "8/8/4k3/8/8/4K3/4P3/8 w - - 0 1",
    "8/5k2/8/4PK2/8/8/8/8 w - - 0 1",
    "8/8/1p1k4/1P6/P2K4/8/8/8 w - - 0 1",
    "8/3k4/8/8/3K4/8/3R4/8 w - - 0 1",
    "8/8/8/4k3/8/8/1R6/4K3 w - - 0 1",
    "6k1/5p2/6p1/8/7p/8/6PP/6K1 b - - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "4r1k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "8/5pk1/6p1/7p/2Q4P/6P1/5PK1/2q5 w - - 0 1",
    "8/8/3bk3/8/8/2B1K3/4P3/8 w - - 0 1",
    "2r3k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "8/pp3kpp/8/8/8/8/PP3KPP/8 w - - 0 1",
    "8/8/8/8/8/5k2/6p1/6K1 w - - 0 1",
    "1r4k1/8/8/8/8/8/6PK/8 b - - 0 1",
)


def run_bench(
    depth: int = DEFAULT_DEPTH,
    out: TextIO | None = None,
    net: Net | None = None,
    threads: int = 1,
) -> tuple[int, int]:
    """Search every bench position to ``depth`` with ``threads`` threads (with ``net``, else
    the hand-written evaluation); print the totals; return (nodes, nps)."""
    stream = out if out is not None else sys.stdout
    warm_up(net)  # the net's own entry points too: compiled here, not in the first timed search
    total_nodes = 0
    total_s = 0.0
    total_cpu_s = 0.0
    limits = GoLimits(depth=depth)
    for number, fen in enumerate(BENCH_FENS, start=1):
        searcher = Searcher(BENCH_HASH_MB, threads)
        searcher.set_net(net)
        position = Position.from_fen(fen)
        started = time.monotonic()
        cpu_started = time.process_time()
        result = searcher.think(position, limits, TimeBudget(None, None), started, lambda _: None)
        total_cpu_s += time.process_time() - cpu_started
        total_s += time.monotonic() - started
        total_nodes += result.nodes
        print(
            f"position {number:2d}/{len(BENCH_FENS)}: {result.nodes:9d} nodes "
            f"bestmove {result.best_move}  {fen}",
            file=stream,
            flush=True,
        )
    nps = int(total_nodes / total_s) if total_s > 0 else 0
    # CPU time of the search threads: the speed per core without other processes' share of it
    cpu_nps = int(total_nodes / total_cpu_s) if total_cpu_s > 0 else 0
    print("=" * 40, file=stream)
    print(f"Total time (ms) : {int(total_s * 1000)}", file=stream)
    print(f"CPU nodes/second: {cpu_nps}", file=stream)
    print(f"Evaluation      : {'net ' + net.hash if net else 'hand-written'}", file=stream)
    print(f"Threads         : {threads}", file=stream)
    print(f"Nodes searched  : {total_nodes}", file=stream)
    print(f"Nodes/second    : {nps}", file=stream, flush=True)
    return total_nodes, nps
