"""Train the learned evaluation on ``tools.nnue_data`` records and write a quantised net file.

The net is the engine's (``engine.nnue``): 768 inputs per perspective into N hidden units,
(squared) clipped ReLU, one output; trained in float, rounded at export.  The target blends
the search score with the game result, ``(1 - wdl) * sigmoid(score / K) + wdl * result`` (side
to move's view), and the loss is the mean squared error of ``sigmoid(output * SCALE / K)``
against it.  Adam with a cosine learning-rate schedule; a held-out share of the games'
positions is never trained on and its loss is printed after every epoch.  Runs on a GPU when
one is at hand.  Needs PyTorch (``make train`` makes its venv); the engine never does.

    make train DATA=~/kibitz-data/gen0.bin NET=/tmp/kibitz.nnue ARGS='--hidden 128'
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
from tools.nnue_data import read_records

QA = 255
QB = 64
SCALE = 400
PAD = nnue.FEATURES  # the index of the all-zero row that pads positions to MAX_PIECES
MAX_PIECES = 32
FT_LIMIT = 32767 / QA / MAX_PIECES  # a feature weight so large could overflow an accumulator
OUT_LIMIT = 32767 / QB

IntArray = npt.NDArray[np.int64]


def features(records: npt.NDArray[np.void]) -> tuple[IntArray, IntArray, IntArray]:
    """Input indices of every record for white's and black's view (padded with ``PAD``), and
    the side to move (0 white, 1 black)."""
    n = len(records)
    occupancy = records["occupancy"].astype("<u8").view(np.uint8).reshape(n, 8)
    bits = np.unpackbits(occupancy, axis=1, bitorder="little").astype(bool)  # (n, 64)
    packed = records["pieces"]
    nibbles = np.stack([packed & 15, packed >> 4], axis=2).reshape(n, 32)
    rank = np.cumsum(bits, axis=1) - 1  # the k-th occupied square holds nibble k
    rows, squares = np.nonzero(bits)
    codes = nibbles[rows, rank[rows, squares]].astype(np.int64)
    piece_type = codes % 8
    black = codes >= 8
    white_view = (black * 6 + piece_type) * 64 + squares
    black_view = ((~black) * 6 + piece_type) * 64 + (squares ^ 56)
    slot = rank[rows, squares]
    white_idx = np.full((n, MAX_PIECES), PAD, dtype=np.int64)
    black_idx = np.full((n, MAX_PIECES), PAD, dtype=np.int64)
    white_idx[rows, slot] = white_view
    black_idx[rows, slot] = black_view
    return white_idx, black_idx, records["stm"].astype(np.int64)


class Net(torch.nn.Module):  # type: ignore[misc, unused-ignore]
    """The float model of ``engine.nnue``'s net."""

    def __init__(self, hidden: int, screlu: bool) -> None:
        super().__init__()
        self.ft = torch.nn.EmbeddingBag(nnue.FEATURES + 1, hidden, mode="sum", padding_idx=PAD)
        self.ft_bias = torch.nn.Parameter(torch.zeros(hidden))
        self.out = torch.nn.Linear(2 * hidden, 1)
        self.screlu = screlu
        with torch.no_grad():
            self.ft.weight.uniform_(-0.05, 0.05)
            self.ft.weight[PAD].zero_()
            self.ft_bias.fill_(0.1)

    def forward(self, white: torch.Tensor, black: torch.Tensor, stm: torch.Tensor
                ) -> torch.Tensor:
        a_white = self.ft(white) + self.ft_bias
        a_black = self.ft(black) + self.ft_bias
        side = stm.unsqueeze(1).bool()
        us = torch.where(side, a_black, a_white)
        them = torch.where(side, a_white, a_black)
        x = torch.clamp(torch.cat([us, them], dim=1), 0.0, 1.0)
        if self.screlu:
            x = x * x
        return self.out(x).squeeze(1)  # in units of SCALE centipawns

    def clip(self) -> None:
        with torch.no_grad():
            self.ft.weight.clamp_(-FT_LIMIT, FT_LIMIT)
            self.out.weight.clamp_(-OUT_LIMIT, OUT_LIMIT)


def export(model: Net, activation: int) -> bytes:
    """The net file: weights rounded to the engine's integer scales."""
    w1 = model.ft.weight.detach().cpu().numpy()[: nnue.FEATURES]
    b1 = model.ft_bias.detach().cpu().numpy()
    w2 = model.out.weight.detach().cpu().numpy()[0]
    b2 = float(model.out.bias.detach().cpu().numpy()[0])
    return nnue.encode_net(np.round(w1 * QA), np.round(b1 * QA), np.round(w2 * QB),
                           round(b2 * QA * QB), activation=activation, qa=QA, qb=QB,
                           scale=SCALE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue_train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="tools.nnue_data records")
    parser.add_argument("--out", type=Path, required=True, help="the net file to write")
    parser.add_argument("--hidden", type=int, default=128, help="hidden units per side")
    parser.add_argument("--activation", choices=("crelu", "screlu"), default="screlu")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--lr", type=float, default=1e-3, help="the starting learning rate")
    parser.add_argument("--wdl", type=float, default=0.3,
                        help="weight of the game result in the target (0 .. 1)")
    parser.add_argument("--k", type=float, default=400.0, help="sigmoid scale K (cp)")
    parser.add_argument("--validation", type=float, default=0.1,
                        help="share of positions held out")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if not 0.0 <= args.wdl <= 1.0 or not 0.0 < args.validation < 1.0:
        raise SystemExit("--wdl must be 0..1 and --validation strictly between 0 and 1")
    if not 1 <= args.hidden <= nnue.MAX_HIDDEN:
        raise SystemExit(f"--hidden must be 1..{nnue.MAX_HIDDEN}")
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    records = read_records(args.data)
    if len(records) < 100:
        raise SystemExit(f"--data {args.data}: {len(records)} positions are too few to train on")
    white, black, stm = features(records)
    score = torch.tensor(records["score"].astype(np.float32))
    result_white = torch.tensor(records["result"].astype(np.float32) / 2.0)
    stm_t = torch.tensor(stm)
    result = torch.where(stm_t == 1, 1.0 - result_white, result_white)
    target = (1 - args.wdl) * torch.sigmoid(score / args.k) + args.wdl * result
    # Consecutive records come from the same game: hold out a contiguous tail of the file so
    # that validation positions are not near-copies of training ones.
    split = int(len(records) * (1 - args.validation))
    tensors = [torch.tensor(white), torch.tensor(black), stm_t, target]
    train = [t[:split].to(device) for t in tensors]
    valid = [t[split:].to(device) for t in tensors]
    activation = nnue.ACT_SCRELU if args.activation == "screlu" else nnue.ACT_CRELU
    model = Net(args.hidden, activation == nnue.ACT_SCRELU).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps = args.epochs * math.ceil(split / args.batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps,
                                                          eta_min=args.lr / 100)

    def loss_of(batch: list[torch.Tensor]) -> torch.Tensor:
        output = model(batch[0], batch[1], batch[2])
        return torch.mean((torch.sigmoid(output * SCALE / args.k) - batch[3]) ** 2)

    print(f"{len(records)} positions: {split} to train, {len(records) - split} held out; "
          f"N={args.hidden} {args.activation} on {device}", flush=True)
    for epoch in range(1, args.epochs + 1):
        started = time.monotonic()
        model.train()
        order = torch.randperm(split, device=device)
        total = 0.0
        for first in range(0, split, args.batch):
            index = order[first:first + args.batch]
            optimiser.zero_grad()
            loss = loss_of([t[index] for t in train])
            loss.backward()
            optimiser.step()
            schedule.step()
            model.clip()
            total += float(loss.detach()) * len(index)
        model.eval()
        with torch.no_grad():
            held_out = float(loss_of(valid))
        print(f"epoch {epoch:3d}: train loss {total / split:.6f}  validation loss "
              f"{held_out:.6f}  lr {schedule.get_last_lr()[0]:.2e}  "
              f"{time.monotonic() - started:.1f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(export(model, activation))
    net = nnue.load_net(args.out)  # the engine's own check of what was written
    print(f"wrote {args.out}: net {net.hash}, N={net.hidden}, {args.out.stat().st_size} bytes")
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
    from tools.nnue_data import decode_board

    count = len(records)
    with torch.no_grad():
        floats = (model(valid[0][:count], valid[1][:count], valid[2][:count]) * SCALE).cpu()
    learned, hand = [], []
    for record in records:
        position = Position.from_fen(decode_board(record).fen())
        h, n = nnue.static_scores(position, net)
        hand.append(h)
        learned.append(n if n is not None else 0)
    error = np.abs(np.array(learned) - floats.numpy())
    corr = float(np.corrcoef(np.array(learned), np.array(hand))[0, 1])
    print(f"{count} held-out positions: engine vs float model mean |diff| {error.mean():.1f} cp "
          f"(max {error.max():.1f}); correlation with the hand-written evaluation {corr:.3f}")
    for fen in QUEEN_UP_FENS:
        h, n = nnue.static_scores(Position.from_fen(fen), net)
        print(f"{fen}: net {n} cp, hand-written {h} cp (side to move)")


if __name__ == "__main__":
    sys.exit(main())
