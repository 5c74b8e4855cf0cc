"""The net's input indices of ``tools.nnue.data`` records, as the engine computes them.

``engine.nnue`` gives each side's inputs one at a time from the board (``view``,
``feature_in_view``); the trainer needs them for millions of records at once, so they are
computed here on arrays, without PyTorch, where a test can hold them against the engine's.
A net of K king buckets has ``768 * K`` inputs: a side's own king picks the bucket (the
``king_table``'s entry of its square, seen from that side) and, on files e-h, mirrors the
board across the d/e line.  Positions are padded to ``MAX_PIECES`` indices with the index
``inputs`` (an all-zero row of the trainer's embedding).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine import nnue

MAX_PIECES = nnue.MAX_PIECES
KING_NIBBLE = 5  # a record's nibble: type - 1 (the king is 5), + 8 for black

IndexArray = npt.NDArray[np.int16]
# Records turned into input indices at a time: the unpacking's intermediates take about 2 KB a
# record, so all of a 16 M-position set at once needed more than 24 GB.
FEATURE_CHUNK = 1 << 20


def _table(rows: list[list[int]]) -> npt.NDArray[np.int64]:
    """A king table from its ranks 1 to 8, files a-d each (e-h mirror them)."""
    half = np.asarray(rows, dtype=np.int64)
    return np.concatenate([half, half[:, ::-1]], axis=1).reshape(64)


# King bucket layouts by their number of buckets, as the side sees the board (rank 1 its own).
# Four: the king castled (files a-b after mirroring: g1 and h1 of the short castle, a1 and b1
# of the long), on the back rank in the centre, one rank up, and out in front (endings).
# Eight split the centre and the front further.
KING_LAYOUTS: dict[int, npt.NDArray[np.int64]] = {
    4: _table([[0, 0, 1, 1], [2, 2, 2, 2]] + [[3, 3, 3, 3]] * 6),
    8: _table([[0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 4, 4], [5, 5, 5, 5], [6, 6, 6, 6],
               [6, 6, 6, 6], [7, 7, 7, 7], [7, 7, 7, 7]]),
}


def inputs_of(king_table: npt.NDArray[np.int64] | None) -> int:
    """The number of inputs of a net with this king table (None: no king buckets)."""
    return nnue.FEATURES * (1 if king_table is None else nnue.check_king_table(king_table))


def features(records: npt.NDArray[np.void], king_table: npt.NDArray[np.int64] | None = None,
             ) -> tuple[IndexArray, IndexArray, npt.NDArray[np.int64]]:
    """Input indices of every record for white's and black's view (padded with
    ``inputs_of(king_table)``), and the side to move (0 white, 1 black).  A row's count of
    indices other than the pad is its number of pieces (``pieces``).  The indices are int16
    (16 king buckets of 768 inputs and the pad fit), a quarter of int64's memory."""
    n = len(records)
    pad = inputs_of(king_table)
    white_idx = np.full((n, MAX_PIECES), pad, dtype=np.int16)
    black_idx = np.full((n, MAX_PIECES), pad, dtype=np.int16)
    for first in range(0, n, FEATURE_CHUNK):
        last = first + FEATURE_CHUNK
        _fill(records[first:last], king_table, white_idx[first:last], black_idx[first:last])
    return white_idx, black_idx, records["stm"].astype(np.int64)


def _fill(records: npt.NDArray[np.void], king_table: npt.NDArray[np.int64] | None,
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
    if king_table is not None:
        white_king = np.zeros(n, dtype=np.int64)
        black_king = np.zeros(n, dtype=np.int64)
        kings = piece_type == KING_NIBBLE
        white_king[rows[kings & ~black]] = squares[kings & ~black]
        black_king[rows[kings & black]] = squares[kings & black] ^ 56
        for king, flip, view in ((white_king, white_flip, white_view),
                                 (black_king, black_flip, black_view)):
            mirror = np.where(king & 7 >= 4, 7, 0)
            bucket = king_table[king ^ mirror]
            flip ^= mirror[rows]
            view += bucket[rows] * nnue.FEATURES
    white_idx[rows, slot] = white_view + (squares ^ white_flip)
    black_idx[rows, slot] = black_view + (squares ^ black_flip)


def pieces(indices: IndexArray, pad: int) -> npt.NDArray[np.int64]:
    """Pieces on the board of each row of input indices (padded with ``pad``)."""
    return np.asarray((indices != pad).sum(axis=1), dtype=np.int64)
