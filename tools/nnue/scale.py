"""A net's centipawns fitted to the hand-written evaluation's.

A net file's header ``scale`` is the centipawns per unit of the float output.  This tool sets it
so that, over quiet positions of a data file, the net's raw score regressed on the hand-written
score has slope 1 (least squares, over the positions the hand-written evaluation scores within
``FIT_WITHIN_CP``, where both are mostly material and the two agree on what a pawn is).  The
weights are left as they are, so the net ranks positions exactly as before.

Why: the search's margins (futility, razoring, null-move and probcut bounds, aspiration windows,
the drawish shrink) are centipawns tuned with the hand-written evaluation, and so are the bot's
resign and draw thresholds and the scores it posts to the chat.  A net trained at K = 400 on
fast self-play learns larger scores than its data's (the results of such games are more decisive
than ``sigmoid(score / 400)`` says), and a generation trained on the last one's scores grows
further: over the same 3,000 positions kibitz-2 scored 1.33 times the hand-written evaluation
and kibitz-3 1.60 times, so the margins pruned ever harder.  The trainer fits the scale of every
net it writes, so the generations speak the same centipawns.

    python -m tools.nnue.scale NET --data FILE [FILE ...] [--out NET2]   # fit
    python -m tools.nnue.scale NET --scale CP --out NET2                  # set
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import chess
import numpy as np

from engine import nnue
from engine.board import Position
from tools.nnue.data import Records, decode_board, read_records

FIT_WITHIN_CP: Final = 600  # positions the hand-written evaluation scores beyond this are left out
FIT_POSITIONS: Final = 4000  # positions drawn evenly from the data files
MIN_FIT_POSITIONS: Final = 50  # fewer leave the slope to chance


class ScaleFitError(ValueError):
    """The positions cannot fit a scale (too few, or the net disagrees in sign)."""


@dataclass(frozen=True)
class ScaleFit:
    positions: int  # the positions the fit used
    slope: float  # the net's score per hand-written centipawn at the file's own scale
    old_scale: int
    scale: int  # the header scale that makes the slope 1


def fit_scale(net: nnue.Net, boards: Iterable[chess.Board]) -> ScaleFit:
    """The header scale at which ``net`` scores ``boards`` on the hand-written evaluation's
    scale (the raw net score: neither shrunk as drawish nor given a variant's term)."""
    hand: list[int] = []
    learned: list[int] = []
    for board in boards:
        position = Position.from_fen(board.fen())
        hand_cp = nnue.static_scores(position, None)[0]
        if abs(hand_cp) <= FIT_WITHIN_CP:
            hand.append(hand_cp)
            learned.append(nnue.raw_net_score(position, net))
    if len(hand) < MIN_FIT_POSITIONS:
        raise ScaleFitError(f"{len(hand)} positions within {FIT_WITHIN_CP} cp of level are too "
                            f"few to fit a scale (at least {MIN_FIT_POSITIONS})")
    slope = float(np.polyfit(np.array(hand, dtype=np.float64),
                             np.array(learned, dtype=np.float64), 1)[0])
    old_scale = net.scale
    if slope <= 0.0:
        raise ScaleFitError(f"net {net.hash} scores against the hand-written evaluation "
                            f"(slope {slope:.3f}): no scale fits it")
    scale = max(1, min(nnue.MAX_SCALE, round(old_scale / slope)))
    return ScaleFit(len(hand), slope, old_scale, scale)


def with_scale(data: bytes, scale: int) -> bytes:
    """The bytes of a net file with its header scale replaced (the weights untouched)."""
    if not 1 <= scale <= nnue.MAX_SCALE:
        raise ValueError(f"scale {scale} is outside 1..{nnue.MAX_SCALE}")
    rewritten = bytearray(data)
    struct.pack_into("<I", rewritten, nnue.SCALE_OFFSET, scale)
    return bytes(rewritten)


def sample(records: Records, count: int = FIT_POSITIONS) -> list[chess.Board]:
    """``count`` positions drawn evenly from ``records`` (all of them when fewer)."""
    if len(records) <= count:
        return [decode_board(record) for record in records]
    picks = np.linspace(0, len(records) - 1, count).astype(np.int64)
    return [decode_board(records[int(i)]) for i in picks]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("net", help="a net file, or the name of a net in engine/nets/")
    parser.add_argument("--data", type=Path, nargs="+",
                        help="tools.nnue.data record files the positions are drawn from")
    parser.add_argument("--scale", type=int,
                        help="write this scale instead of fitting one (then no --data)")
    parser.add_argument("--positions", type=int, default=FIT_POSITIONS,
                        help=f"positions drawn from the files (default {FIT_POSITIONS})")
    parser.add_argument("--out", type=Path,
                        help="write the net with the fitted scale here (default: only print)")
    args = parser.parse_args(argv)
    try:
        net = nnue.load_net(nnue.resolve_eval_file(args.net))
    except nnue.NetFileError as error:
        raise SystemExit(str(error)) from None
    if (args.scale is None) == (args.data is None):
        raise SystemExit("give --data to fit a scale, or --scale to set one")
    if args.scale is not None:
        if args.out is None:
            raise SystemExit("--scale needs --out")
        scale = args.scale
    else:
        parts = []
        for path in args.data:
            if not path.is_file():
                raise SystemExit(f"--data {path}: no such file")
            parts.append(read_records(path))
        try:
            fit = fit_scale(net, sample(np.concatenate(parts), args.positions))
        except ScaleFitError as error:
            raise SystemExit(str(error)) from None
        print(f"net {net.hash}: {fit.slope:.3f} x the hand-written evaluation over "
              f"{fit.positions} positions at scale {fit.old_scale}; fitted scale {fit.scale}")
        scale = fit.scale
    if args.out is not None:
        try:
            data = with_scale(Path(net.path).read_bytes(), scale)
        except ValueError as error:
            raise SystemExit(f"--scale: {error}") from None
        args.out.write_bytes(data)
        written = nnue.load_net(args.out)  # the engine's own check of what was written
        print(f"wrote {args.out}: net {written.hash}, scale {scale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
