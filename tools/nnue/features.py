"""The net's input indices of ``tools.nnue.data`` records, as the engine computes them.

``engine.nnue`` gives each side's inputs one at a time from the board (``view``,
``feature_in_view``); the trainer needs them for millions of records at once, so they are
computed here on arrays, without PyTorch, where a test can hold them against the engine's.
A net of K king buckets has ``768 * K`` inputs: a side's own king picks the bucket (the
layout's entry for its square, seen from that side) and, in a mirroring layout, on files
e-h mirrors the board across the d/e line.  Positions are padded to ``MAX_PIECES`` indices
with the index ``inputs`` (an all-zero row of the trainer's embedding).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from engine import nnue

MAX_PIECES = nnue.MAX_PIECES
KING_NIBBLE = 5  # a record's nibble: type - 1 (the king is 5), + 8 for black

IndexArray = npt.NDArray[np.int16]
# A net's held-out loss is also given by pieces on the board (kings included): the ending, the
# middle game, and 25 or more (where the games against stronger engines are judged: Ethereal's
# claims of an advantage come at a median of 29 pieces).
HELD_OUT_PIECE_EDGES = (2, 11, 25, MAX_PIECES + 1)
HELD_OUT_PHASES = tuple(f"{low}-{high - 1}" for low, high in pairwise(HELD_OUT_PIECE_EDGES))
# Records turned into input indices at a time: the unpacking's intermediates take about 2 KB a
# record, so all of a 16 M-position set at once needed more than 24 GB.
FEATURE_CHUNK = 1 << 20


@dataclass(frozen=True)
class KingLayout:
    """King buckets: the bucket of each of the 64 own-king squares (a1 = 0, as the side sees
    the board) and whether a king on files e-h mirrors its side's board."""

    table: npt.NDArray[np.int64]
    mirror: bool

    @property
    def buckets(self) -> int:
        return nnue.check_king_table(self.table, self.mirror)


def _table(rows: list[list[int]]) -> npt.NDArray[np.int64]:
    """A king table from its ranks 1 to 8, files a-h each."""
    return np.asarray(rows, dtype=np.int64).reshape(64)


def _mirrored(rows: list[list[int]]) -> npt.NDArray[np.int64]:
    """A king table from its ranks 1 to 8, files a-d each (e-h mirror them)."""
    half = np.asarray(rows, dtype=np.int64)
    return np.concatenate([half, half[:, ::-1]], axis=1).reshape(64)


# King bucket layouts, as the side sees the board (rank 1 its own).  The "wings" layouts keep
# the board as it is: a king castled short and one castled long are buckets apart, and a net
# without king buckets starts them exactly (each bucket its weights).  The "mirror" layouts
# see a king on files e-h mirrored onto a-d: half the king squares to learn, but a net
# without king buckets starts them as its mirror image on half the positions.
KING_LAYOUTS: dict[str, KingLayout] = {
    # ranks 1-2 by wing (a-c, d-e, f-h), then the king out in front (endings)
    "wings4": KingLayout(_table([[0, 0, 0, 1, 1, 2, 2, 2]] * 2 + [[3] * 8] * 6), False),
    # rank 1 and rank 2 each by wing, ranks 3-4, ranks 5-8
    "wings8": KingLayout(_table([[0, 0, 0, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 5, 5, 5]]
                                + [[6] * 8] * 2 + [[7] * 8] * 4), False),
    # castled (files a-b), back rank in the centre, second rank, further up
    "mirror4": KingLayout(_mirrored([[0, 0, 1, 1], [2, 2, 2, 2]] + [[3, 3, 3, 3]] * 6), True),
    "mirror8": KingLayout(_mirrored([[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 4, 4], [5, 5, 5, 5],
                                     [6, 6, 6, 6], [6, 6, 6, 6], [7, 7, 7, 7],
                                     [7, 7, 7, 7]]), True),
}


def layout_name_of(net: nnue.Net) -> str | None:
    """The name in ``KING_LAYOUTS`` of a net's king buckets (None for a net without them), so
    that its records' inputs are computed as the engine computes them; a net whose table and
    mirroring are none of them is refused (``ValueError``)."""
    if net.king_buckets <= 1:
        return None
    for name, known in KING_LAYOUTS.items():
        if np.array_equal(known.table, net.king_table) and known.mirror == net.king_mirror:
            return name
    raise ValueError(f"{net.path}: its king buckets are none of KING_LAYOUTS")


def inputs_of(layout: KingLayout | None) -> int:
    """The number of inputs of a net with this king layout (None: no king buckets)."""
    return nnue.FEATURES * (1 if layout is None else layout.buckets)


def features(records: npt.NDArray[np.void], layout: KingLayout | None = None,
             ) -> tuple[IndexArray, IndexArray, npt.NDArray[np.int64]]:
    """Input indices of every record for white's and black's view (padded with
    ``inputs_of(layout)``), and the side to move (0 white, 1 black).  A row's count of
    indices other than the pad is its number of pieces (``pieces``).  The indices are int16
    (16 king buckets of 768 inputs and the pad fit), a quarter of int64's memory."""
    n = len(records)
    pad = inputs_of(layout)
    white_idx = np.full((n, MAX_PIECES), pad, dtype=np.int16)
    black_idx = np.full((n, MAX_PIECES), pad, dtype=np.int16)
    for first in range(0, n, FEATURE_CHUNK):
        last = first + FEATURE_CHUNK
        _fill(records[first:last], layout, white_idx[first:last], black_idx[first:last])
    return white_idx, black_idx, records["stm"].astype(np.int64)


def _fill(records: npt.NDArray[np.void], layout: KingLayout | None,
          white_idx: IndexArray, black_idx: IndexArray) -> None:
    """Write the records' occupied slots into their rows of the (padded) index arrays."""
    n = len(records)
    occupancy = records["occupancy"].astype("<u8").view(np.uint8).reshape(n, 8)
    bits = np.unpackbits(occupancy, axis=1, bitorder="little").astype(bool)  # (n, 64)
    packed = records["pieces"]
    nibbles = np.stack([packed & 15, packed >> 4], axis=2).reshape(n, 32)
    rank = np.cumsum(bits, axis=1) - 1  # the k-th occupied square holds nibble k
    rows, squares = np.nonzero(bits)
    slot = rank[rows, squares]
    codes = nibbles[rows, slot].astype(np.int64)
    piece_type = codes % 8
    black = codes >= 8
    # (relation * 6 + type - 1) * 64: white's own pieces first, black's own for black
    white_view = (black * 6 + piece_type) * 64
    black_view = ((~black) * 6 + piece_type) * 64
    white_flip = np.zeros(len(rows), dtype=np.int64)
    black_flip = np.full(len(rows), 56, dtype=np.int64)
    if layout is not None:
        white_king = np.zeros(n, dtype=np.int64)
        black_king = np.zeros(n, dtype=np.int64)
        kings = piece_type == KING_NIBBLE
        white_king[rows[kings & ~black]] = squares[kings & ~black]
        black_king[rows[kings & black]] = squares[kings & black] ^ 56
        for king, flip, view in ((white_king, white_flip, white_view),
                                 (black_king, black_flip, black_view)):
            mirror = np.where(layout.mirror & (king & 7 >= 4), 7, 0)
            bucket = layout.table[king ^ mirror]
            flip ^= mirror[rows]
            view += bucket[rows] * nnue.FEATURES
    white_idx[rows, slot] = white_view + (squares ^ white_flip)
    black_idx[rows, slot] = black_view + (squares ^ black_flip)


def file_mirror(layout: KingLayout | None) -> npt.NDArray[np.int64] | None:
    """Each input index's index on the board mirrored across the d/e line (the pad its own),
    or None where mirroring adds nothing: a mirroring layout sees a king on e-h as its mirror
    image already, so both boards have the same inputs.

    The net sees no castling rights, so a mirrored position keeps its score and result: the
    trainer counts it as a second position.  A layout that keeps the board mirrors with it: a
    king mirrored onto another square is in the bucket of that square, and every square of
    one bucket mirrors into one bucket (``mirror_of_bucket``) or the layout is refused."""
    inputs = inputs_of(layout)
    features = np.arange(nnue.FEATURES, dtype=np.int64)
    if layout is None:
        return np.append(features ^ 7, inputs)
    if layout.mirror:
        return None
    buckets = mirror_of_bucket(layout)
    lookup = (buckets[:, None] * nnue.FEATURES + (features ^ 7)[None, :]).reshape(-1)
    return np.append(lookup, inputs)


def mirror_of_bucket(layout: KingLayout) -> npt.NDArray[np.int64]:
    """The bucket of each bucket's king squares mirrored across the d/e line; ``ValueError``
    when the squares of one bucket mirror into several (the table is not symmetric)."""
    squares = np.arange(64)
    into = np.full(layout.buckets, -1, dtype=np.int64)
    for square, bucket in zip(squares, layout.table, strict=True):
        mirrored = int(layout.table[square ^ 7])
        if into[bucket] not in (-1, mirrored):
            raise ValueError(f"king bucket {bucket} mirrors into buckets {into[bucket]} and "
                             f"{mirrored}: the layout is not symmetric across the d/e line")
        into[bucket] = mirrored
    return into


def record_pieces(records: npt.NDArray[np.void]) -> npt.NDArray[np.int64]:
    """Pieces on the board of each record (its occupancy's bits), kings included."""
    occupancy = records["occupancy"].astype("<u8").view(np.uint8).reshape(len(records), 8)
    return np.asarray(np.unpackbits(occupancy, axis=1).sum(axis=1), dtype=np.int64)


@dataclass(frozen=True)
class PiecesRepeat:
    """The trainer's ``--repeat-pieces MIN=N``: the training positions with at least
    ``min_pieces`` on the board (kings included) are seen ``times`` times an epoch, the others
    once.  Self-play's games spend most of their positions in the ending (an eighth of them
    have 27 or more pieces), while the games against stronger engines are lost in the middle
    game a few moves out of the book."""

    min_pieces: int
    times: int

    @classmethod
    def parse(cls, spec: str) -> PiecesRepeat:
        """``MIN=N``, refused by what is wrong: MIN a count of pieces (3 .. 32), N 2 or more."""
        least, equals, count = spec.partition("=")
        if not equals:
            raise ValueError(f"--repeat-pieces {spec!r}: expected MIN=N, e.g. 25=2")
        try:
            min_pieces, times = int(least), int(count)
        except ValueError:
            raise ValueError(f"--repeat-pieces {spec!r}: MIN and N must be whole "
                             f"numbers") from None
        if not 3 <= min_pieces <= MAX_PIECES:
            raise ValueError(f"--repeat-pieces {spec!r}: MIN must be 3 .. {MAX_PIECES} pieces")
        if times < 2:
            raise ValueError(f"--repeat-pieces {spec!r}: N must be 2 or more (1 repeats "
                             f"nothing)")
        return cls(min_pieces, times)

    def apply(self, records: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
        """The records, then those with ``min_pieces`` or more ``times - 1`` times again."""
        many = records[record_pieces(records) >= self.min_pieces]
        return np.concatenate([records] + [many] * (self.times - 1))


def pieces(indices: IndexArray, pad: int) -> npt.NDArray[np.int64]:
    """Pieces on the board of each row of input indices (padded with ``pad``)."""
    return np.asarray((indices != pad).sum(axis=1), dtype=np.int64)
