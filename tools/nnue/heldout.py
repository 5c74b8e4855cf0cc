"""Nets' losses on the same positions, paired, with the noise of the difference.

``python -m tools.nnue.heldout NET NET ... --data PATH ... --wdl 0.1 [--tail 0.1]``

Each net scores every position as the engine does (its integer weights, ``engine.nnue``'s
arithmetic on arrays), and its loss is the trainer's: the squared difference between
``sigmoid(output)`` and ``(1 - wdl) * sigmoid(score / K) + wdl * result``.  The trainer prints a
net's held-out loss one net at a time and without its noise; the gains a fine-tune brings are
a few tenths of a per cent, and the same net has read 0.36% and 0.75% better than its parent on
two runs of the same factory (docs/RESULTS.md).  Here the first net is the reference, and each
other net's difference to it is taken position by position, so what the positions have in
common cancels, and its standard error comes from blocks of consecutive positions (a block
holds whole games, mostly: a game's positions are not independent draws).

``--tail SHARE`` reads only each file's last SHARE of positions, the trainer's held-out
positions at ``--validation SHARE``; without it every position counts (a run none of the nets
was trained on).

``--reference REF.tsv`` (instead of ``--data`` and ``--wdl``) measures the nets against a
stronger engine's win expectation of sampled positions (``tools.nnue.reference``) instead of
the engine's own labels, which every fine-tune of the net that made them learns.  Each net's
output is first scaled by the one factor that fits it best (printed as ``scale``: a net and
the reference need not agree on how decisive a score is, only on which positions are better),
then the error is the squared difference of the two win chances.  On the chain of default
nets this error fell at every step that passed its SPRT, by about 1% for 11 to 20 Elo, where
the self-play loss put the candidates' gains at a fifth of such a step (docs/RESULTS.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import numpy as np
import numpy.typing as npt

from engine import nnue
from tools.nnue import reference
from tools.nnue.data import RECORD_DTYPE, encode
from tools.nnue.features import (
    HELD_OUT_PHASES,
    HELD_OUT_PIECE_EDGES,
    KING_LAYOUTS,
    features,
    inputs_of,
    layout_name_of,
    pieces,
    record_pieces,
)
from tools.nnue.reference import Judged, ReferenceFileError
from tools.nnue.shards import mean_by_group, training_sources

# Positions scored at a time: the gathered weight rows take 32 x N x 4 bytes a position.
CHUNK = 1 << 14
# Positions of a block for the standard error: about 25 of the factory's games.
DEFAULT_BLOCK = 2000
# A reference file's positions are drawn far apart (tools.nnue.reference): a block of them
# spans as many games as it has positions, near enough.
REFERENCE_BLOCK = 50
# The factors a net's output is scaled by against a reference, searched on this grid.
REFERENCE_SCALES = np.arange(0.25, 4.0, 0.01)

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Positions:
    """The positions every net is scored on: records, their K, and their block of the
    standard error."""

    records: npt.NDArray[np.void]
    k_cp: FloatArray
    block: npt.NDArray[np.int64]


@dataclass(frozen=True)
class Paired:
    """One net against the reference: losses, the difference, its standard error."""

    name: str
    loss: float
    by_phase: dict[str, float]
    diff: float  # mean of (this net's loss - the reference's) over the positions
    diff_se: float  # its standard error over the blocks
    scale: float | None = None  # the factor of the net's output against a reference file


def net_logits(net: nnue.Net, records: npt.NDArray[np.void]) -> FloatArray:
    """Each record's output of the net, side to move's view, before its centipawn scale:
    the logit the trainer's float model computes, here from the quantised weights exactly as
    ``engine.nnue.evaluate_net`` sums them (each half's squares divided by QA, rounded down)."""
    layout_name = layout_name_of(net)
    layout = None if layout_name is None else KING_LAYOUTS[layout_name]
    ft_weights, ft_bias, out_weights, out_biases = nnue.layers(net)
    # one zero row for the index that pads a position's inputs
    rows = np.vstack([ft_weights.astype(np.int32), np.zeros((1, net.hidden), dtype=np.int32)])
    qa, qb = int(net.net_meta[nnue.NM_QA]), int(net.net_meta[nnue.NM_QB])
    screlu = net.activation_name == "screlu"
    hidden = net.hidden
    logits = np.empty(len(records), dtype=np.float64)
    for first in range(0, len(records), CHUNK):
        part = records[first:first + CHUNK]
        white, black, stm = features(part, layout)
        acc_white = ft_bias.astype(np.int32) + rows[white.astype(np.int64)].sum(axis=1)
        acc_black = ft_bias.astype(np.int32) + rows[black.astype(np.int64)].sum(axis=1)
        black_to_move = (stm == 1)[:, None]
        us = np.where(black_to_move, acc_black, acc_white)
        them = np.where(black_to_move, acc_white, acc_black)
        bucket = nnue.bucket_of(pieces(white, inputs_of(layout)), net.buckets)
        weights = out_weights[bucket].astype(np.int64)
        total = out_biases[bucket].astype(np.int64)
        for half, acc in enumerate((us, them)):
            v = np.clip(acc, 0, qa).astype(np.int64)
            w = weights[:, half * hidden:(half + 1) * hidden]
            if screlu:
                total += (v * v * w).sum(axis=1) // qa
            else:
                total += (v * w).sum(axis=1)
        logits[first:first + len(part)] = total / (qa * qb)
    return logits


def targets(records: npt.NDArray[np.void], k_cp: FloatArray, wdl: float) -> FloatArray:
    """The trainer's target of each record: its score's win chance blended with the result."""
    score = records["score"].astype(np.float64)
    result_white = records["result"].astype(np.float64) / 2.0
    result = np.where(records["stm"] == 1, 1.0 - result_white, result_white)
    return np.asarray((1.0 - wdl) / (1.0 + np.exp(-score / k_cp)) + wdl * result,
                      dtype=np.float64)


def losses(net: nnue.Net, positions: Positions, target: FloatArray) -> FloatArray:
    """Each position's squared error for the net."""
    predicted = 1.0 / (1.0 + np.exp(-net_logits(net, positions.records)))
    return np.asarray((predicted - target) ** 2, dtype=np.float64)


def block_se(diff: FloatArray, block: npt.NDArray[np.int64]) -> float:
    """The standard error of ``diff``'s mean from its blocks' means (weighted by their
    sizes): blocks of whole games, so that positions of one game count as one draw."""
    counts = np.bincount(block).astype(np.float64)
    used = counts > 0
    means = np.bincount(block, weights=diff)[used] / counts[used]
    weights = counts[used] / counts[used].sum()
    blocks = len(means)
    if blocks < 2:
        return float("nan")
    mean = float((weights * means).sum())
    # the variance of a weighted mean of independent blocks, each block's spread estimated
    # from all of them (blocks of equal size give std(means) / sqrt(blocks))
    spread = float((weights * (means - mean) ** 2).sum()) * blocks / (blocks - 1)
    return float(np.sqrt(spread * float((weights ** 2).sum())))


def load_positions(paths: Sequence[Path], tail: float, block_size: int) -> Positions:
    """The positions of the data files (each one's last ``tail`` share), blocked within each
    file: a block never spans two files."""
    parts, ks, blocks = [], [], []
    next_block = 0
    for source in training_sources(paths, None):
        records = source.records[int(len(source.records) * (1.0 - tail)):]
        if not len(records):
            continue
        parts.append(records)
        ks.append(np.full(len(records), source.k, dtype=np.float64))
        block = np.arange(len(records), dtype=np.int64) // block_size
        # a short last block joins the one before it
        if len(records) > block_size and len(records) % block_size < block_size // 2:
            block[block == block[-1]] = block[-1] - 1
        blocks.append(block + next_block)
        next_block = int(blocks[-1][-1]) + 1
    if not parts:
        raise SystemExit("--data: no positions to score")
    return Positions(np.concatenate(parts), np.concatenate(ks), np.concatenate(blocks))


def paired(names: Sequence[str], errors: Sequence[FloatArray], phase: npt.NDArray[np.int64],
           block: npt.NDArray[np.int64], scales: Sequence[float | None]) -> list[Paired]:
    """Each net's mean error, by phase, and its difference to the first net's, paired."""
    rows = []
    for name, error, scale in zip(names, errors, scales, strict=True):
        diff = error - errors[0]
        rows.append(Paired(name, float(error.mean()),
                           mean_by_group(error, phase, HELD_OUT_PHASES), float(diff.mean()),
                           block_se(diff, block), scale))
    return rows


def phases_of(records: npt.NDArray[np.void]) -> npt.NDArray[np.int64]:
    return np.digitize(record_pieces(records), HELD_OUT_PIECE_EDGES[1:-1]).astype(np.int64)


def net_name(net: nnue.Net) -> str:
    return f"{Path(net.path).name} ({net.hash})"


def compare(nets: Sequence[nnue.Net], positions: Positions, wdl: float) -> list[Paired]:
    """Every net's loss on the positions, and its paired difference to the first net's."""
    target = targets(positions.records, positions.k_cp, wdl)
    return paired([net_name(net) for net in nets],
                  [losses(net, positions, target) for net in nets],
                  phases_of(positions.records), positions.block, [None] * len(nets))


def fitted_errors(logits: FloatArray, expectation: FloatArray) -> tuple[float, FloatArray]:
    """The factor of ``logits`` whose win chances are nearest the expectations (least
    squares, on ``REFERENCE_SCALES``), and each position's squared error at it."""
    def squared_errors(scale: float) -> FloatArray:
        return np.asarray((1.0 / (1.0 + np.exp(-scale * logits)) - expectation) ** 2,
                          dtype=np.float64)

    means = [float(squared_errors(float(scale)).mean()) for scale in REFERENCE_SCALES]
    best = float(REFERENCE_SCALES[int(np.argmin(means))])
    return best, squared_errors(best)


def reference_records(judged: Sequence[Judged]) -> npt.NDArray[np.void]:
    """The positions of a reference file as records (a result the nets do not read)."""
    return np.frombuffer(b"".join(encode(chess.Board(j.fen), j.score_cp, 1) for j in judged),
                         dtype=RECORD_DTYPE)


def compare_reference(nets: Sequence[nnue.Net], judged: Sequence[Judged],
                      block_size: int = REFERENCE_BLOCK) -> list[Paired]:
    """Every net's error against the reference's win expectations, each at its fitted scale,
    and its paired difference to the first net's."""
    records = reference_records(judged)
    expectation = np.array([j.expectation for j in judged], dtype=np.float64)
    fitted = [fitted_errors(net_logits(net, records), expectation) for net in nets]
    block = np.arange(len(records), dtype=np.int64) // block_size
    return paired([net_name(net) for net in nets], [error for _, error in fitted],
                  phases_of(records), block, [scale for scale, _ in fitted])


def table(rows: Sequence[Paired]) -> str:
    """The comparison as a text table: the difference in per cent of the reference's loss,
    with two standard errors (and each net's fitted scale against a reference file)."""
    base = rows[0].loss
    phases = list(rows[0].by_phase)
    scaled = rows[0].scale is not None
    lines = [f"{'net':<32} {'loss':>9} {'vs first':>9} {'± 2 SE':>8}"
             + (f" {'scale':>6}" if scaled else "") + "  "
             + " ".join(f"{p:>9}" for p in phases)]
    for row in rows:
        versus = "" if row is rows[0] else f"{100 * row.diff / base:+8.2f}%"
        noise = "" if row is rows[0] else f"{200 * row.diff_se / base:7.2f}%"
        lines.append(f"{row.name:<32} {row.loss:9.6f} {versus:>9} {noise:>8}"
                     + (f" {row.scale:6.2f}" if row.scale is not None else "") + "  "
                     + " ".join(f"{row.by_phase.get(p, float('nan')):9.6f}" for p in phases))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.heldout", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("nets", nargs="+", metavar="NET",
                        help="net files (or names in engine/nets/); the first is the reference")
    against = parser.add_mutually_exclusive_group(required=True)
    against.add_argument("--data", type=Path, nargs="+",
                         help="record files, shards or directories of shards (as the "
                              "trainer's): the loss against their labels")
    against.add_argument("--reference", type=Path,
                         help="a file of tools.nnue.reference: the error against a stronger "
                              "engine's win expectations")
    parser.add_argument("--wdl", type=float,
                        help="with --data: weight of the game result in the target, as the "
                             "nets were trained (0 .. 1)")
    parser.add_argument("--tail", type=float, default=1.0,
                        help="score only each file's last share of positions (the trainer's "
                             "held-out ones at --validation SHARE); default all")
    parser.add_argument("--block", type=int,
                        help=f"consecutive positions a block of the standard error (default "
                             f"{DEFAULT_BLOCK} with --data, {REFERENCE_BLOCK} with --reference)")
    args = parser.parse_args(argv)
    if args.data is not None and args.wdl is None:
        raise SystemExit("--data needs --wdl: the weight of the result the nets learnt")
    if args.reference is not None and args.wdl is not None:
        raise SystemExit("--wdl is for --data: the reference file's target is its engine's")
    if args.wdl is not None and not 0.0 <= args.wdl <= 1.0:
        raise SystemExit(f"--wdl must be 0..1, not {args.wdl}")
    if not 0.0 < args.tail <= 1.0:
        raise SystemExit(f"--tail must be in (0, 1], not {args.tail}")
    if args.block is not None and args.block < 1:
        raise SystemExit(f"--block must be 1 or more, not {args.block}")
    nets = []
    for name in args.nets:
        try:
            net = nnue.load_net(nnue.resolve_eval_file(name))
            layout_name_of(net)
        except (OSError, nnue.NetFileError, ValueError) as error:
            raise SystemExit(f"{name}: {error}") from None
        nets.append(net)
    if args.reference is not None:
        try:
            judged = reference.read(args.reference)
        except ReferenceFileError as error:
            raise SystemExit(str(error)) from None
        block_size = args.block or REFERENCE_BLOCK
        print(f"{len(judged)} positions of {args.reference} in "
              f"{-(-len(judged) // block_size)} blocks, each net's output scaled to fit")
        print(table(compare_reference(nets, judged, block_size)))
        return 0
    positions = load_positions(args.data, args.tail, args.block or DEFAULT_BLOCK)
    print(f"{len(positions.records)} positions in {int(positions.block.max()) + 1} blocks, "
          f"wdl {args.wdl}")
    print(table(compare(nets, positions, args.wdl)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
