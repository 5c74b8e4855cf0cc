"""How far the factory's labels are from a deeper search, and the net from its labels.

A net learns the search scores its data was labelled with.  Whether the next net gains more
from more positions or from deeper labels depends on two distances, both measured here in the
trainer's own target space (``sigmoid(score / K)``, the score part of the target, K each
score's own: the data's for a stored label, the searching net's scale for a fresh score):

- the label's noise: the stored score (the factory's search, inside its game, the table warm
  from the moves before) against a deep search of the same position;
- the net's error: its static evaluation against the stored label, and against the deep
  search.

Beside them, fresh searches at each of ``--nodes`` (the table emptied before each) show what
a factory at that node count would write.  When the net's error against its labels is far
above the labels' own noise, the net has not learnt what its labels already say (more data,
more width); when the two come close, deeper labels are the lever.

    python -m tools.nnue.labels --data ~/kibitz-data --positions 1200 --deep 200000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine import params
from engine.board import Position
from engine.nnue import Net, net_for, static_scores
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from tools.common.selfplay import HASH_MB
from tools.nnue.data import MAX_SCORE_CP, decode_board
from tools.nnue.shards import training_sources

DEFAULT_POSITIONS = 1000
DEFAULT_DEEP_NODES = 200_000
DEFAULT_NODES = (1500, 3000, 6000, 12000)


@dataclass(frozen=True)
class LabelRow:
    """One kind of score over the sampled positions, set against the deep search and the
    stored label: mean squared differences in target space, and the median absolute one in
    centipawns against the deep search (the mean would be the won positions')."""

    name: str
    mse_deep: float
    mse_stored: float
    median_abs_deep_cp: float


def target(scores_cp: npt.NDArray[np.float64], k: npt.NDArray[np.float64] | float
           ) -> npt.NDArray[np.float64]:
    """The score part of the trainer's target, ``sigmoid(score / K)``, the score capped as
    the records cap it."""
    capped = np.clip(scores_cp, -MAX_SCORE_CP, MAX_SCORE_CP)
    return np.asarray(1.0 / (1.0 + np.exp(-capped / k)), dtype=np.float64)


def fresh_score(searcher: Searcher, fen: str, nodes: int) -> int:
    """The score of a search of ``nodes`` from ``fen`` with an empty table."""
    searcher.clear()
    found = searcher.think(Position.from_fen(fen), GoLimits(nodes=nodes),
                           TimeBudget(None, None), time.monotonic(), None)
    return found.score


def measure(fens: Sequence[str], stored_cp: Sequence[int], stored_k: Sequence[float],
            net: Net, node_counts: Sequence[int], deep_nodes: int) -> list[LabelRow]:
    """The rows for the stored labels, the net's static scores and a fresh search at each
    of ``node_counts``, against a fresh search of ``deep_nodes``."""
    searcher = Searcher(HASH_MB)
    searcher.set_net(net)
    static: list[int] = []
    fresh: list[list[int]] = [[] for _ in node_counts]
    deep: list[int] = []
    for fen in fens:
        _, score = static_scores(Position.from_fen(fen), net)
        if score is None:
            raise ValueError(f"{fen}: the net gives no score here")
        static.append(score)
        for column, nodes in zip(fresh, node_counts, strict=True):
            column.append(fresh_score(searcher, fen, nodes))
        deep.append(fresh_score(searcher, fen, deep_nodes))
    k_net = float(net.scale)
    deep_cp = np.asarray(deep, dtype=np.float64)
    deep_t = target(deep_cp, k_net)
    label_cp = np.asarray(stored_cp, dtype=np.float64)
    label_t = target(label_cp, np.asarray(stored_k, dtype=np.float64))
    # a stored label in the data's centipawns, read as the searching net's for the cp column
    columns: list[tuple[str, npt.NDArray[np.float64], npt.NDArray[np.float64]]] = [
        ("stored label", label_t, label_cp / np.asarray(stored_k) * k_net),
        ("net, static", target(np.asarray(static, dtype=np.float64), k_net),
         np.asarray(static, dtype=np.float64)),
    ]
    for nodes, column in zip(node_counts, fresh, strict=True):
        cp = np.asarray(column, dtype=np.float64)
        columns.append((f"search, {nodes} nodes", target(cp, k_net), cp))
    capped_deep = np.clip(deep_cp, -MAX_SCORE_CP, MAX_SCORE_CP)
    return [LabelRow(name, float(np.mean((t - deep_t) ** 2)), float(np.mean((t - label_t) ** 2)),
                     float(np.median(np.abs(np.clip(cp, -MAX_SCORE_CP, MAX_SCORE_CP)
                                            - capped_deep))))
            for name, t, cp in columns]


def table(rows: Sequence[LabelRow], positions: int, deep_nodes: int) -> str:
    lines = [f"{positions} positions, against a search of {deep_nodes} nodes",
             "| score | MSE against the deep search | MSE against the stored label "
             "| median abs cp against the deep search |",
             "|---|---|---|---|"]
    lines += [f"| {row.name} | {row.mse_deep:.6f} | {row.mse_stored:.6f} "
              f"| {row.median_abs_deep_cp:.0f} |" for row in rows]
    return "\n".join(lines)


def sample(paths: Sequence[Path], positions: int, seed: int
           ) -> tuple[list[str], list[int], list[float]]:
    """``positions`` records drawn at random from the data (files, shards or directories):
    their FENs, stored scores and K."""
    sources = training_sources(paths, None)
    sizes = np.array([len(source.records) for source in sources])
    total = int(sizes.sum())
    if positions > total:
        raise SystemExit(f"--positions {positions}: the data holds {total}")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(total, positions, replace=False))
    starts = np.concatenate(([0], np.cumsum(sizes)))
    fens: list[str] = []
    scores: list[int] = []
    ks: list[float] = []
    for index in chosen:
        which = int(np.searchsorted(starts, index, side="right")) - 1
        record = sources[which].records[int(index - starts[which])]
        fens.append(decode_board(record).fen())
        scores.append(int(record["score"]))
        ks.append(sources[which].k)
    return fens, scores, ks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="record files, shards or directories of shards")
    parser.add_argument("--positions", type=int, default=DEFAULT_POSITIONS)
    parser.add_argument("--deep", type=int, default=DEFAULT_DEEP_NODES,
                        help="nodes of the reference search")
    parser.add_argument("--nodes", type=int, nargs="*", default=list(DEFAULT_NODES),
                        help="node counts of the fresh searches set beside it")
    parser.add_argument("--evalfile", default=params.DEFAULT_EVAL_FILE,
                        help="the net that searches (the one that labelled the data, as a rule)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.positions < 1 or args.deep < 1 or any(n < 1 for n in args.nodes):
        parser.error("--positions, --deep and --nodes must be positive")
    fens, scores, ks = sample(args.data, args.positions, args.seed)
    net = net_for(args.evalfile)
    rows = measure(fens, scores, ks, net, args.nodes, args.deep)
    data_ks = ", ".join(f"{k:g}" for k in sorted(set(ks)))
    print(f"net {net.hash} (scale {net.scale}); data K {data_ks}")
    print(table(rows, len(fens), args.deep))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
