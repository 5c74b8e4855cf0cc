"""Train the learned evaluation on ``tools.nnue.data`` records and write a quantised net file.

The net is the engine's (``engine.nnue``): 768 inputs per perspective into N hidden units,
(squared) clipped ReLU, one output (from the weights of the position's output bucket, by its
number of pieces, with ``--buckets``); trained in float, rounded at export.  The target blends
the search score with the game result, ``(1 - wdl) * sigmoid(score / K) + wdl * result`` (side
to move's view), and the loss is the mean squared error of ``sigmoid(output)`` against it: the
model's output is a logit, ``SCALE`` centipawns a unit at K = 400.  K is the data's: the
centipawns per unit of the net that played its games (400 for the hand-written evaluation's
games and for a net written at scale 400; a fitted net's own scale otherwise): each file's
sidecar (``FILE.json``, written by ``tools.nnue.data``) records it, and ``--k`` overrides it,
one for all files or one per file.  Adam with a cosine learning-rate schedule; a held-out
share of the games' positions is never trained on and its loss is printed after every epoch,
and each origin's beside it when the data mixes them (self-play shards, the bot's games from
``tools.nnue.from_pgn``, plain record files).
The file's centipawn scale is then fitted to the hand-written evaluation's on the held-out positions
(``tools.nnue.scale``): the search's margins are in those centipawns (``--keep-scale``
writes the ``--init`` net's instead, the scale a fine-tune's data was played at).  Runs on a
GPU when one is at hand.  Needs PyTorch (``make train`` makes its venv); the engine never does.

    make train DATA=~/kibitz-data/gen0.bin NET=/tmp/kibitz.nnue ARGS='--hidden 128'

``--fraction`` trains on the first part of each file's training positions only, for a learning
curve over the same held-out positions.  ``--repeat ORIGIN=N`` shows the training positions of
one origin N times an epoch (a small source, such as the games against another engine, beside
millions of self-play's), its held-out positions once; ``--repeat-pieces MIN=N`` does the same
for the positions with at least MIN pieces on the board (the middle game).  ``--init NET``
starts from a written net (the last generation's, its shape with it) instead of random
weights: the next generation learns from its own games without starting over, which needs
less data.  A net of one bucket starts every bucket of a ``--buckets`` model with its own
output layer, so that the bucketed model scores as it did until training tells the buckets
apart; ``--output-only`` then trains the output layer alone, the feature transformer kept as
it is.  ``--king-layout NAME`` gives the inputs king buckets
(``tools.nnue.features.KING_LAYOUTS``); a net without them starts the rows all buckets share.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch  # type: ignore[import-not-found, unused-ignore]

from engine import nnue
from tools.nnue import scale as nnue_scale
from tools.nnue.features import (
    HELD_OUT_PHASES,
    HELD_OUT_PIECE_EDGES,
    KING_LAYOUTS,
    KingLayout,
    PiecesRepeat,
    features,
    file_mirror,
    inputs_of,
    layout_name_of,
    pieces,
)
from tools.nnue.shards import mean_by_group, origin_repeats, training_sources

# the engine's net format declares the quantisation scales; the trainer rounds to them
QA = nnue.QA
QB = nnue.QB
DEFAULT_HIDDEN = 128
SCALE = nnue.SCALE  # centipawns per unit of the model's logit at K = 400 (``--no-fit-scale``)
MAX_PIECES = nnue.MAX_PIECES
FT_LIMIT = 32767 / QA / MAX_PIECES  # a feature weight so large could overflow an accumulator
OUT_LIMIT = 32767 / QB

# Positions per forward pass when a loss is measured without training (the held-out set).
EVAL_BATCH = 1 << 16


def widen(batch: list[torch.Tensor]) -> list[torch.Tensor]:
    """A batch with its index tensors as int64, which ``EmbeddingBag`` takes."""
    return [batch[0].long(), batch[1].long(), *batch[2:]]


PIECES = nnue.FEATURES // 64  # (relation, piece type) pairs: a feature's square dropped


class Net(torch.nn.Module):  # type: ignore[misc, unused-ignore]
    """The float model of ``engine.nnue``'s net.

    With ``factorize``, each feature's weights are the sum of its own row and a row shared by
    every square of its piece (a "virtual" feature, as in Stockfish's trainer): what a piece is
    worth anywhere is learnt from all its positions at once, which matters when the data is
    small.  The export adds the two, so the engine's net has the same shape either way.
    ``buckets`` output layers side by side: each position takes its bucket's output.

    With a king ``layout`` (K king buckets) the inputs are 768 per bucket, and each feature's
    weights are also the sum of its bucket's row and a row shared by all buckets (the
    ``king_factor``): what a piece on a square is worth whatever the king's bucket is learnt
    from every position, the buckets learn only how the king's place changes it.  A net
    without king buckets starts the shared rows, with the buckets' own at 0 (``load_init``).
    """

    def __init__(self, hidden: int, screlu: bool, factorize: bool = False,
                 buckets: int = 1, layout: KingLayout | None = None) -> None:
        super().__init__()
        self.inputs = inputs_of(layout)
        self.layout = layout
        self.pad = self.inputs  # the index of the all-zero row that pads positions
        self.ft = torch.nn.EmbeddingBag(self.inputs + 1, hidden, mode="sum",
                                        padding_idx=self.pad)
        self.ft_bias = torch.nn.Parameter(torch.zeros(hidden))
        self.out = torch.nn.Linear(2 * hidden, buckets)
        self.screlu = screlu
        self.factor = (torch.nn.EmbeddingBag(PIECES + 1, hidden, mode="sum", padding_idx=PIECES)
                       if factorize else None)
        self.king_factor = (
            torch.nn.EmbeddingBag(nnue.FEATURES + 1, hidden, mode="sum",
                                  padding_idx=nnue.FEATURES)
            if self.inputs > nnue.FEATURES else None)
        with torch.no_grad():
            self.ft.weight.uniform_(-0.05, 0.05)
            self.ft.weight[self.pad].zero_()
            self.ft_bias.fill_(0.1)
            if self.factor is not None:
                self.factor.weight.zero_()
            if self.king_factor is not None:
                self.king_factor.weight.zero_()

    def _side(self, indices: torch.Tensor) -> torch.Tensor:
        acc = self.ft(indices) + self.ft_bias
        padded = indices == self.pad
        in_bucket = indices % nnue.FEATURES  # the feature with its king bucket dropped
        if self.factor is not None:
            acc = acc + self.factor(torch.where(padded, PIECES, in_bucket // 64))
        if self.king_factor is not None:
            acc = acc + self.king_factor(torch.where(padded, nnue.FEATURES, in_bucket))
        return acc

    def feature_weights(self) -> torch.Tensor:
        """The K x 768 rows of N feature weights as the engine will see them."""
        weights = self.ft.weight[: self.inputs]
        shared = torch.zeros_like(self.ft.weight[: nnue.FEATURES])
        if self.factor is not None:
            shared = shared + self.factor.weight[:PIECES].repeat_interleave(64, dim=0)
        if self.king_factor is not None:
            shared = shared + self.king_factor.weight[: nnue.FEATURES]
        return weights + shared.repeat(self.inputs // nnue.FEATURES, 1)

    def feature_parameters(self) -> list[torch.nn.Parameter]:
        """The feature transformer's parameters (all but the output layer's)."""
        return [self.ft.weight, self.ft_bias,
                *([self.factor.weight] if self.factor is not None else []),
                *([self.king_factor.weight] if self.king_factor is not None else [])]

    def forward(self, white: torch.Tensor, black: torch.Tensor, stm: torch.Tensor,
                bucket: torch.Tensor) -> torch.Tensor:
        a_white = self._side(white)
        a_black = self._side(black)
        side = stm.unsqueeze(1).bool()
        us = torch.where(side, a_black, a_white)
        them = torch.where(side, a_white, a_black)
        x = torch.clamp(torch.cat([us, them], dim=1), 0.0, 1.0)
        if self.screlu:
            x = x * x
        # a logit: the win chance is its sigmoid
        return self.out(x).gather(1, bucket.unsqueeze(1)).squeeze(1)

    def clip(self) -> None:
        with torch.no_grad():
            self.ft.weight.clamp_(-FT_LIMIT, FT_LIMIT)
            if self.king_factor is not None:
                self.king_factor.weight.clamp_(-FT_LIMIT, FT_LIMIT)
            self.out.weight.clamp_(-OUT_LIMIT, OUT_LIMIT)


def mirror_half(indices: torch.Tensor, lookup: torch.Tensor) -> torch.Tensor:
    """The batch with its second half mirrored across the d/e line (file a <-> h), each
    input index replaced by its mirror's (``lookup``: ``features.file_mirror``): a mirrored
    position keeps its score and result, so the data counts double."""
    half = len(indices) // 2
    return torch.cat([indices[:half], lookup[indices[half:].long()].to(indices.dtype)])


def load_init(model: Net, net: nnue.Net) -> None:
    """The model's weights from a written net: its integers back to floats at the file's own
    scales (the factorised rows start at 0), so that an export before any training writes the
    same weights again.  A net of one output bucket gives its output layer to every bucket of
    the model; a bucketed net needs a model of as many buckets.  A net without king buckets
    gives its feature weights to a king-bucketed model's shared rows (``king_factor``), each
    bucket's own rows at 0: in a layout that keeps the board the model then scores every
    position as the net did (a mirroring one scores a king on e-h as the net's mirror image);
    a net of king buckets needs a model of the same layout.  The file's centipawn scale is
    not read back: the model's output times ``SCALE`` is centipawns at K = 400 (a logit), and
    the file's scale, the engine's centipawns, is fitted again at export."""
    qa, qb = int(net.net_meta[nnue.NM_QA]), int(net.net_meta[nnue.NM_QB])
    ft_weights, ft_bias, out_weights, out_biases = nnue.layers(net)
    w1 = ft_weights.astype(np.float32) / qa
    b1 = ft_bias.astype(np.float32) / qa
    old, new = net.hidden, model.ft_bias.shape[0]
    buckets = model.out.weight.shape[0]
    if new < old:
        raise ValueError(f"a model of N={new} cannot start from a net of N={old}")
    if net.buckets not in (1, buckets):
        raise ValueError(f"a model of {buckets} output buckets cannot start from a net of "
                         f"{net.buckets}")
    if net.king_buckets > 1 and (model.layout is None
                                 or not np.array_equal(net.king_table, model.layout.table)
                                 or net.king_mirror != model.layout.mirror):
        raise ValueError("a net of king buckets needs a model of the same king layout")
    w2 = np.broadcast_to(out_weights, (buckets, 2 * old)).astype(np.float32) / qb
    b2 = np.broadcast_to(out_biases, (buckets,)).astype(np.float32) / (qa * qb)
    with torch.no_grad():
        # A wider model keeps the net's units as its first ones; the added units keep their
        # random input weights but start with output weights of 0, so the widened model
        # scores every position as the net did and the new units grow from there.
        if model.king_factor is not None and net.king_buckets == 1:
            model.ft.weight[:model.inputs, :old] = 0.0
            model.king_factor.weight[:nnue.FEATURES, :old] = torch.from_numpy(w1)
        else:
            model.ft.weight[:model.inputs, :old] = torch.from_numpy(w1)
        model.ft_bias[:old] = torch.from_numpy(b1)
        model.out.weight.zero_()
        model.out.weight[:, :old] = torch.from_numpy(w2[:, :old])  # the side to move's units
        model.out.weight[:, new:new + old] = torch.from_numpy(w2[:, old:])  # the other side's
        model.out.bias[:] = torch.from_numpy(b2)


def export(model: Net, activation: int) -> bytes:
    """The net file: weights rounded to the engine's integer scales."""
    # clipped again as a sum: the two parts of a factorised weight are clipped one by one
    w1 = np.clip(model.feature_weights().detach().cpu().numpy(), -FT_LIMIT, FT_LIMIT)
    b1 = model.ft_bias.detach().cpu().numpy()
    w2 = model.out.weight.detach().cpu().numpy()
    b2 = model.out.bias.detach().cpu().numpy().astype(np.float64)
    return nnue.encode_net(np.round(w1 * QA), np.round(b1 * QA), np.round(w2 * QB),
                           np.round(b2 * QA * QB), activation=activation, qa=QA, qb=QB,
                           scale=SCALE,
                           king_table=None if model.layout is None else model.layout.table,
                           king_mirror=model.layout is not None and model.layout.mirror)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="tools.nnue.data record files, shards or directories of shards "
                             "(tools.nnue.factory; each file or shard holds out its own tail)")
    parser.add_argument("--out", type=Path, required=True, help="the net file to write")
    parser.add_argument("--hidden", type=int,
                        help=f"hidden units per side (default: the --init net's, or "
                             f"{DEFAULT_HIDDEN})")
    parser.add_argument("--activation", choices=("crelu", "screlu"), default="screlu")
    parser.add_argument("--buckets", type=int,
                        help=f"output buckets by the number of pieces, 1..{nnue.MAX_BUCKETS} "
                             "(default: the --init net's, or 1)")
    parser.add_argument("--king-layout", choices=sorted(KING_LAYOUTS),
                        help="king input buckets: 768 inputs for each bucket of the own "
                             "king's square (tools.nnue.features.KING_LAYOUTS; default: the "
                             "--init net's, or none); a net without them starts every bucket")
    parser.add_argument("--output-only", action="store_true",
                        help="train the output layer alone, the --init net's feature "
                             "transformer kept as it is")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4096)
    # 1e-3 left a net far from converged after 3 epochs (held-out loss 0.041 against 0.011)
    parser.add_argument("--lr", type=float, default=1e-2, help="the starting learning rate")
    parser.add_argument("--wdl", type=float, default=0.3,
                        help="weight of the game result in the target (0 .. 1)")
    parser.add_argument("--k", type=float, nargs="+",
                        help="the data's sigmoid scale K (cp): one for every --data file, or "
                             "one per file in their order (default: each file's sidecar, "
                             "FILE.json, written by tools.nnue.data)")
    parser.add_argument("--validation", type=float, default=0.1,
                        help="share of positions held out")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="share of the training positions used (a learning curve: the "
                             "held-out positions stay the same)")
    parser.add_argument("--no-factorize", dest="factorize", action="store_false",
                        help="no piece weights shared by all squares (see Net)")
    parser.add_argument("--no-mirror", dest="mirror", action="store_false",
                        help="do not mirror half of each batch across the d/e line")
    parser.add_argument("--init", metavar="NET",
                        help="start from this net file (or the name of a net in engine/nets/): "
                             "its activation replaces --activation, and its N is the "
                             "least --hidden (a larger one widens it: see load_init)")
    scaling = parser.add_mutually_exclusive_group()
    scaling.add_argument("--no-fit-scale", dest="fit_scale", action="store_false",
                         help=f"write the centipawn scale {SCALE} instead of fitting it to the "
                              "hand-written evaluation's on the held-out positions "
                              "(tools.nnue.scale)")
    # A fine-tune's positions were played (and labelled, K) at the --init net's scale; a refit
    # on one session's held-out positions moved it 153 -> 146..148, a change of its own that
    # the factory's measure could not tell from the weights' (docs/RESULTS.md).
    scaling.add_argument("--keep-scale", action="store_true",
                         help="write the --init net's centipawn scale instead of fitting it: "
                              "a fine-tune is then read at the scale its data was played at")
    parser.add_argument("--repeat", metavar="ORIGIN=N", action="append", default=[],
                        help="see the training positions of this origin (selfplay, versus, "
                             "pgn, records) N times an epoch, the held-out ones once "
                             "(repeatable)")
    parser.add_argument("--repeat-pieces", metavar="MIN=N",
                        help="see the training positions with at least MIN pieces (kings "
                             "included) N times an epoch, the others once: the middle game "
                             "weighs more against self-play's many endings")
    parser.add_argument("--seed", type=int, default=1)
    # PyTorch takes every core by default: two trainings at once on two cores then took 446 s
    # an epoch where one alone took 86.5 s (docs/RESULTS.md); give each one thread instead.
    parser.add_argument("--threads", type=int,
                        help="CPU threads for PyTorch (default: its own, one per core); one "
                             "each when trainings run beside each other or the factory")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            raise SystemExit(f"--threads must be 1 or more, not {args.threads}")
        torch.set_num_threads(args.threads)
    try:
        by_pieces = None if args.repeat_pieces is None else PiecesRepeat.parse(args.repeat_pieces)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    init: nnue.Net | None = None
    if args.init is not None:
        try:
            init = nnue.load_net(nnue.resolve_eval_file(args.init))
        except nnue.NetFileError as error:
            raise SystemExit(f"--init: {error}") from None
        args.hidden = init.hidden if args.hidden is None else args.hidden
        if args.hidden < init.hidden:
            raise SystemExit(f"--hidden {args.hidden} is narrower than the --init net's "
                             f"N={init.hidden} (N stays, or grows)")
        args.activation = init.activation_name
        if init.king_buckets > 1 and args.king_layout is None:
            try:
                args.king_layout = layout_name_of(init)
            except ValueError as error:
                raise SystemExit(f"--init: {error}") from None
        args.buckets = init.buckets if args.buckets is None else args.buckets
        if init.buckets not in (1, args.buckets):
            raise SystemExit(f"--buckets {args.buckets}: the --init net has {init.buckets} "
                             f"output buckets (a net of one may be split into any number)")
    elif args.output_only:
        raise SystemExit("--output-only needs --init: the feature transformer it keeps")
    elif args.keep_scale:
        raise SystemExit("--keep-scale needs --init: the scale it keeps")
    args.hidden = DEFAULT_HIDDEN if args.hidden is None else args.hidden
    args.buckets = 1 if args.buckets is None else args.buckets
    if not 1 <= args.buckets <= nnue.MAX_BUCKETS:
        raise SystemExit(f"--buckets must be 1..{nnue.MAX_BUCKETS}")
    layout = None if args.king_layout is None else KING_LAYOUTS[args.king_layout]
    if init is not None and init.king_buckets > 1 and (
            layout is None or not np.array_equal(init.king_table, layout.table)
            or init.king_mirror != layout.mirror):
        raise SystemExit(f"--king-layout {args.king_layout}: not the --init net's king buckets")
    mirror_table = file_mirror(layout) if args.mirror else None
    if mirror_table is None:
        # a mirroring layout sees a king on e-h as its mirror image: both boards are one
        args.mirror = False
    sources = training_sources(args.data, args.k)
    if not 0.0 <= args.wdl <= 1.0 or not 0.0 < args.validation < 1.0:
        raise SystemExit("--wdl must be 0..1 and --validation strictly between 0 and 1")
    if not 0.0 < args.fraction <= 1.0:
        raise SystemExit("--fraction must be in (0, 1]")
    if args.epochs < 0:
        raise SystemExit("--epochs must be 0 or more (0: write the --init net again, its scale "
                         "fitted anew)")
    if not 1 <= args.hidden <= nnue.MAX_HIDDEN:
        raise SystemExit(f"--hidden must be 1..{nnue.MAX_HIDDEN}")
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mirror_lookup = None if mirror_table is None else torch.from_numpy(mirror_table).to(device)
    # Consecutive records come from the same game: each file's contiguous tail is held out,
    # so that validation positions are not near-copies of training ones.
    train_parts, valid_parts = [], []
    k_train, k_valid, valid_origin = [], [], []
    origins = sorted({source.origin for source in sources})
    repeats = origin_repeats(args.repeat, origins)
    for source in sources:
        part = source.records
        split = int(len(part) * (1 - args.validation))
        trained = part[:int(split * args.fraction)]
        if by_pieces is not None:
            trained = by_pieces.apply(trained)
        train_parts.append(np.tile(trained, repeats.get(source.origin, 1)))
        valid_parts.append(part[split:])
        k_train.append(np.full(len(train_parts[-1]), source.k, dtype=np.float32))
        k_valid.append(np.full(len(valid_parts[-1]), source.k, dtype=np.float32))
        valid_origin.append(np.full(len(valid_parts[-1]), origins.index(source.origin),
                                    dtype=np.int64))
    origin_ids = np.concatenate(valid_origin)
    phase_names = list(HELD_OUT_PHASES)
    records = np.concatenate(train_parts + valid_parts)
    split = sum(len(part) for part in train_parts)
    white, black, stm = features(records, layout)
    piece_count = pieces(white, inputs_of(layout))
    bucket = torch.from_numpy(nnue.bucket_of(piece_count, args.buckets))
    phase_ids = np.digitize(piece_count[split:], HELD_OUT_PIECE_EDGES[1:-1])
    score = torch.tensor(records["score"].astype(np.float32))
    result_white = torch.tensor(records["result"].astype(np.float32) / 2.0)
    stm_t = torch.tensor(stm)
    result = torch.where(stm_t == 1, 1.0 - result_white, result_white)
    k_cp = torch.tensor(np.concatenate(k_train + k_valid))
    target = (1 - args.wdl) * torch.sigmoid(score / k_cp) + args.wdl * result
    tensors = [torch.from_numpy(white), torch.from_numpy(black), stm_t, bucket, target]
    train = [t[:split].to(device) for t in tensors]
    valid = [t[split:].to(device) for t in tensors]
    activation = nnue.ACT_SCRELU if args.activation == "screlu" else nnue.ACT_CRELU
    model = Net(args.hidden, activation == nnue.ACT_SCRELU, args.factorize, args.buckets,
                layout)
    if init is not None:
        load_init(model, init)
    model = model.to(device)
    if args.output_only:
        for parameter in model.feature_parameters():
            parameter.requires_grad_(False)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    steps = args.epochs * math.ceil(split / args.batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps,
                                                          eta_min=args.lr / 100)

    def errors_of(batch: list[torch.Tensor]) -> torch.Tensor:
        output = model(*widen(batch)[:4])
        return (torch.sigmoid(output) - batch[4]) ** 2

    def loss_of(batch: list[torch.Tensor]) -> torch.Tensor:
        return torch.mean(errors_of(batch))

    def held_out_text() -> str:
        """The held-out loss, by pieces on the board, and each origin's when the data has
        several."""
        # a batch at a time: one forward pass over a million positions needs gigabytes
        errors = []
        with torch.no_grad():
            for first in range(0, len(valid[0]), EVAL_BATCH):
                batch = [t[first:first + EVAL_BATCH] for t in valid]
                errors.append(errors_of(batch).reshape(-1).cpu().numpy().astype(np.float64))
        error = np.concatenate(errors)
        text = f"validation loss {error.mean():.6f}"
        by_phase = mean_by_group(error, phase_ids, phase_names)
        text += " (pieces " + ", ".join(f"{p} {loss:.6f}" for p, loss in by_phase.items()) + ")"
        if len(origins) > 1:
            by_origin = mean_by_group(error, origin_ids, origins)
            text += " (" + ", ".join(f"{o} {loss:.6f}" for o, loss in by_origin.items()) + ")"
        return text

    pieces_text = ("" if by_pieces is None else f", {by_pieces.min_pieces} or more pieces "
                   f"seen {by_pieces.times} times an epoch")
    print(f"{len(records)} positions: {split} to train, {len(records) - split} held out; "
          f"N={args.hidden} {args.activation}"
          f"{f', {args.buckets} output buckets' if args.buckets > 1 else ''}"
          f"{f', king layout {args.king_layout}' if layout is not None else ''} on {device}"
          f"{', the output layer alone' if args.output_only else ''}"
          f"{', half of each batch mirrored' if args.mirror else ''}"
          f"{', factorised' if args.factorize else ''}"
          f"{f', from {init.path} (net {init.hash})' if init is not None else ''}"
          f"{''.join(f', {o} seen {n} times an epoch' for o, n in repeats.items())}"
          f"{pieces_text}",
          flush=True)
    if init is not None:
        print(f"epoch   0: {held_out_text()} (the --init net)", flush=True)
    for epoch in range(1, args.epochs + 1):
        started = time.monotonic()
        model.train()
        order = torch.randperm(split, device=device)
        total = 0.0
        for first in range(0, split, args.batch):
            index = order[first:first + args.batch]
            optimiser.zero_grad()
            batch = [t[index] for t in train]
            if mirror_lookup is not None:
                batch[0], batch[1] = (mirror_half(batch[0], mirror_lookup),
                                      mirror_half(batch[1], mirror_lookup))
            loss = loss_of(batch)
            loss.backward()
            optimiser.step()
            schedule.step()
            model.clip()
            total += float(loss.detach()) * len(index)
        model.eval()
        held_out = held_out_text()
        print(f"epoch {epoch:3d}: train loss {total / split:.6f}  {held_out}  "
              f"lr {schedule.get_last_lr()[0]:.2e}  "
              f"{time.monotonic() - started:.1f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(export(model, activation))
    if args.keep_scale:
        assert init is not None
        args.out.write_bytes(nnue_scale.with_scale(args.out.read_bytes(), init.scale))
        print(f"scale {init.scale} cp per unit: the --init net's (--keep-scale)")
    elif args.fit_scale:
        fit = nnue_scale.fit_scale(nnue.load_net(args.out), nnue_scale.sample(records[split:]))
        args.out.write_bytes(nnue_scale.with_scale(args.out.read_bytes(), fit.scale))
        print(f"scale {fit.scale} cp per unit: at {fit.old_scale} the net scored {fit.slope:.3f} "
              f"x the hand-written evaluation over {fit.positions} held-out positions")
    net = nnue.load_net(args.out)  # the engine's own check of what was written
    print(f"wrote {args.out}: net {net.hash}, N={net.hidden}, {net.buckets} output bucket(s), "
          f"{net.king_buckets} king bucket(s), "
          f"{args.out.stat().st_size} bytes")
    sanity(model, net, records[split:][:SANITY_POSITIONS], valid)
    return 0


SANITY_POSITIONS = 300
QUEEN_UP_FENS = (  # the side to move (white, then black) is a queen up, then a queen down
    "rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR b KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNB1KBNR w KQkq - 0 1",
)


def sanity(model: Net, net: nnue.Net, records: npt.NDArray[np.void],
           valid: list[torch.Tensor]) -> None:
    """The engine's integer scores of held-out positions against the float model's (the
    rounding error), their correlation with the hand-written evaluation, and a queen up."""
    from engine.board import Position
    from tools.nnue.data import decode_board

    count = len(records)
    with torch.no_grad():
        floats = (model(*widen([t[:count] for t in valid[:4]])) * net.scale).cpu()
    learned, hand = [], []
    for record in records:
        position = Position.from_fen(decode_board(record).fen())
        hand.append(nnue.static_scores(position, None)[0])
        # the raw output: the search's score also shrinks drawish endings, which the float
        # model does not, and a run of them at the held-out tail once showed as a 9 to 22 cp
        # "rounding error" (2 cp without them)
        learned.append(nnue.raw_net_score(position, net))
    error = np.abs(np.array(learned) - floats.numpy())
    corr = float(np.corrcoef(np.array(learned), np.array(hand))[0, 1])
    print(f"{count} held-out positions: engine vs float model mean |diff| {error.mean():.1f} cp "
          f"(max {error.max():.1f}); correlation with the hand-written evaluation {corr:.3f}")
    for fen in QUEEN_UP_FENS:
        h, n = nnue.static_scores(Position.from_fen(fen), net)
        print(f"{fen}: net {n} cp, hand-written {h} cp (side to move)")


if __name__ == "__main__":
    sys.exit(main())
