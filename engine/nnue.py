"""A learned evaluation (NNUE): a perspective net 768 x K -> N x 2 -> 1 x B, quantised to integers.

Inputs: 768 features per perspective, ``(relation * 6 + type - 1) * 64 + square``, where
``relation`` is 0 for the perspective's own pieces and 1 for the other side's, ``type`` is
pawn..king (1-6) and ``square`` is 0-63 (a1 = 0, h8 = 63) as seen by that side: black's view
flips the board (``square ^ 56``), so one set of weights serves both sides.  With K king
buckets (version 3) each side's inputs are the 768 of its own king's bucket (``bucket * 768 +
index``), and in a mirroring net a side whose king stands on files e-h sees the board
mirrored (``square ^ 7``), so that the king is always on a-d: a side's weights then depend on
where its king is, what the king's safety and the pawn shelter are made of.  A move of the
king into another bucket (or across the d/e line) makes that side's accumulator afresh.
Each side's
accumulator is the feature bias plus the weight rows of its active features (int16).  The
output takes the side to move's accumulator, then the other's, through the activation
(clipped ReLU, or its square), dots them with 2N output weights (int32 sums) and adds a bias.
The output weights and bias are those of the position's bucket (``output_bucket``: B buckets by
the number of pieces on the board, 2 .. 32), so that an ending is scored by weights of its own
rather than the middle game's; B is 1 for a net without buckets.

In floats (as the trainer computes): ``a = clamp(b1 + sum W1[f], 0, 1)`` for each side,
``out = w2 . act(a_us ++ a_them) + b2`` and the score is ``out * SCALE`` centipawns, side to
move's view.  Quantised: W1 and b1 are multiplied by QA, w2 by QB, b2 by QA * QB, and the
integer sum is scaled back by ``SCALE / (QA * QB)`` (SCReLU divides its squares by QA first).

Net file (little-endian), refused with ``NetFileError`` unless every field checks out::

    magic        8 bytes   b"KBZNNUE\\0"
    version      uint32    1 (one output bucket) or FORMAT_VERSION (2)
    hidden       uint32    N, 1 .. MAX_HIDDEN
    activation   uint32    ACT_CRELU (0) or ACT_SCRELU (1)
    qa, qb       uint32    quantisation scales of the accumulator and the output weights
    scale        uint32    centipawns per unit of the float output
    buckets      uint32    B, 2 .. MAX_BUCKETS (version 2), 1 .. MAX_BUCKETS (version 3)
    king_buckets uint32    K, 1 .. MAX_KING_BUCKETS (version 3 only; otherwise K = 1)
    king_mirror  uint32    1: a king on files e-h mirrors its side's board (version 3 only)
    king_table   uint8     64: the king bucket of each own-king square (a1 = 0, the side's
                           view; mirroring, the same on a square and its mirror; version 3)
    ft_weights   int16     K x 768 x N, feature-major, king bucket by king bucket
    ft_bias      int16     N
    out_weights  int16     B x 2N: bucket by bucket, each the side to move's half first
    out_bias     int32     B

A net with one bucket is written as version 1, so a file without buckets reads the same
everywhere; the header's fields up to ``scale`` sit at the same offsets in both versions.

In the search the net is two arrays (``net16``: the int16 weights, flat, and ``net_meta``:
int32 header fields and the output biases, ``NM_ENABLED`` 0 for the hand-written evaluation)
and the accumulators are ``acc``: int16[STACK_SIZE, 2 * N], one row per stack row, white's half
first.  A row is made from its parent's (``push``: a few weight rows added and subtracted)
only once it is read: ``make_move`` marks the new row stale (``S_ACC``), and the search calls
``ensure`` before an evaluation and before a move is made from the row.  Unmaking costs
nothing (the rows below stay valid), and a null move neither: rows of null moves are skipped
back over.  ``refresh`` computes a row from the board.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine import params
from engine.board import Position
from engine.constants import (
    EMPTY,
    FLAG_CAPTURE,
    FLAG_CASTLE,
    FLAG_EP,
    KING,
    M_PLY,
    MOVE_PROMO_MASK,
    MOVE_PROMO_SHIFT,
    MOVE_SQ_MASK,
    MOVE_TO_SHIFT,
    NULL_MOVE,
    PAWN,
    ROOK,
    S_ACC,
    S_CAPTURED,
    S_KING,
    S_MOVE,
    S_SIDE,
    S_VARIANT,
    SQ64,
    STACK_SIZE,
    VARIANT_CHESS,
    WHITE,
    BoardArray,
    MetaArray,
    StackArray,
)
from engine.evaluate import evaluate, new_scratch, scale_drawish
from engine.jit import njit_noalloc, njit_noalloc_inline
from engine.movegen import castling_squares
from engine.pieceset import piece_count
from engine.variant import variant_eval_white

MAGIC = b"KBZNNUE\0"
FORMAT_VERSION = 2  # the version written for a net with output buckets
FORMAT_VERSION_SINGLE = 1  # one output bucket, no ``buckets`` field
FORMAT_VERSION_KING = 3  # king input buckets: the ``king_buckets`` table follows ``buckets``
FEATURES = 768  # inputs of one king bucket (all of a net without king buckets)
MAX_HIDDEN = 4096
MAX_BUCKETS = 16
MAX_KING_BUCKETS = 16
KING_SQUARES = 64
MAX_PIECES = 32  # the most a legal board holds (16 a side): the buckets split 2 .. 32 evenly
ACT_CRELU = 0
ACT_SCRELU = 1
ACTIVATIONS = {ACT_CRELU: "crelu", ACT_SCRELU: "screlu"}
_HEADER = struct.Struct("<8sIIIIII")
SCALE_OFFSET = _HEADER.size - 4  # the last field common to both versions, ``scale``
_BUCKETS = struct.Struct("<I")  # version 2: the header goes on with the bucket count
# version 3: then the king buckets, 1 when a king on files e-h mirrors the board, and the bucket
# of each square
_KING = struct.Struct("<II64B")
MAX_SCALE = 100_000
_MAX_QA = 1 << 14  # larger scales overflow the int16 accumulators

# The quantisation a net is written with (the trainer rounds to these; a file carries its own,
# which is what the engine reads).  QA: the feature transformer (weights and bias) and so the
# accumulator; QB: the output weights (the output bias is scaled by QA * QB).
QA = 255
# QB 64 rounded the output weights so coarsely that the engine was 4.5 cp from the float model
# on average (max 16); at 512, 1.4 cp (max 4.7).  The engine sums SCReLU in int64, and a CReLU
# half in int32, which no clipped weight can overflow up to N = 256.
QB = 512
SCALE = 400  # centipawns per unit of the float output, before a fitted scale replaces it

# net_meta fields
NM_ENABLED = 0
NM_HIDDEN = 1
NM_ACTIVATION = 2
NM_QA = 3
NM_QB = 4
NM_SCALE = 5
NM_BUCKETS = 6
NM_SUMS_FIT_INT32 = 7  # 1: every half's SCReLU sum fits int32 (``_screlu_sums_fit_int32``)
NM_KING_BUCKETS = 8  # K: 1 for a net without king buckets
NM_KING_MIRROR = 9  # 1: a side whose king is on files e-h sees the board mirrored
NM_OUT_BIAS = 10  # bucket b's output bias is at NM_OUT_BIAS + b
NM_KING_TABLE = NM_OUT_BIAS + MAX_BUCKETS  # the king bucket of each own-king square
NET_META_SIZE = NM_KING_TABLE + KING_SQUARES

Int16Array = npt.NDArray[np.int16]
Int32Array = npt.NDArray[np.int32]

SQ64_TABLE = np.asarray(SQ64, dtype=np.int64)
_INT32_MAX = (1 << 31) - 1
_ZERO32 = np.int32(0)


class NetFileError(ValueError):
    """A net file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Net:
    """A loaded net: its compiled-code arrays and a short hash of the file for ``bench``."""

    net16: Int16Array
    net_meta: Int32Array
    hash: str
    path: str

    @property
    def hidden(self) -> int:
        return int(self.net_meta[NM_HIDDEN])

    @property
    def activation_name(self) -> str:
        return ACTIVATIONS[int(self.net_meta[NM_ACTIVATION])]

    @property
    def scale(self) -> int:
        """The header's centipawns per unit of the output."""
        return int(self.net_meta[NM_SCALE])

    @property
    def buckets(self) -> int:
        """Output buckets (1: one output layer for every position)."""
        return int(self.net_meta[NM_BUCKETS])

    @property
    def king_buckets(self) -> int:
        """King input buckets (1: one set of feature weights whatever the kings' squares)."""
        return int(self.net_meta[NM_KING_BUCKETS])

    @property
    def king_mirror(self) -> bool:
        """Whether a side whose king stands on files e-h sees the board mirrored."""
        return bool(self.net_meta[NM_KING_MIRROR])

    @property
    def king_table(self) -> npt.NDArray[np.int64]:
        """The king bucket of each of the 64 squares (a1 = 0), as the file gives it."""
        return self.net_meta[NM_KING_TABLE:NM_KING_TABLE + KING_SQUARES].astype(np.int64)

    @property
    def inputs(self) -> int:
        """Rows of feature weights: 768 for each king bucket."""
        return FEATURES * self.king_buckets


# Nets already read, by resolved path, with the file's (size, mtime) when read: the engine host
# loads its net before forking, and every game it forks finds it here (shared pages).
_LOADED: dict[str, tuple[tuple[int, int], Net]] = {}


# The nets shipped with the engine (package data): ``EvalFile`` may name one by its file name.
NETS_DIR = Path(__file__).resolve().parent / "nets"


def resolve_eval_file(value: str | Path) -> Path:
    """The file an ``EvalFile`` value names: the path itself, or, for a bare file name that is
    not in the working directory, the net of that name in ``NETS_DIR`` (as Stockfish looks
    beside its binary).  A name found nowhere is returned as given, for its error."""
    path = Path(value).expanduser()
    if path.exists() or path.name != str(value):
        return path
    shipped = NETS_DIR / path.name
    return shipped if shipped.exists() else path


def net_for(path: str | Path) -> Net:
    """``load_net``, reusing a net this process already read from the unchanged file (a bare
    name may be a shipped net: ``resolve_eval_file``)."""
    resolved = resolve_eval_file(path)
    try:
        stat = resolved.stat()
        key, stamp = str(resolved.resolve()), (stat.st_size, stat.st_mtime_ns)
    except OSError:
        return load_net(resolved)  # raises the error naming the path
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    net = load_net(resolved)
    _LOADED[key] = (stamp, net)
    return net


def static_scores(position: Position, net: Net | None) -> tuple[int, int | None]:
    """The hand-written and the net's static scores of ``position`` (side to move's view);
    the net's is None without a net or in a variant it does not play (``NET_PLAYS_VARIANT``)."""
    board, stack, _, meta = position.arrays
    row = int(meta[M_PLY])
    hand = int(evaluate(board, stack, row, new_scratch()))
    if net is None or not params.NET_PLAYS_VARIANT[int(stack[row, S_VARIANT])]:
        return hand, None
    return hand, int(net_score(stack, row, net.net16, net.net_meta, _refreshed(board, row, net)))


def raw_net_score(position: Position, net: Net) -> int:
    """The net's own output for ``position`` (side to move's view, cp): neither shrunk as
    drawish nor given a variant's term, so that it can be set against the trainer's float
    model, which knows neither."""
    board, stack, _, meta = position.arrays
    row = int(meta[M_PLY])
    return int(evaluate_net(stack, row, net.net16, net.net_meta, _refreshed(board, row, net)))


def _refreshed(board: BoardArray, row: int, net: Net) -> Int16Array:
    """Fresh accumulators with row ``row`` computed from ``board``."""
    acc = new_accumulators(net.hidden)
    refresh(board, row, net.net16, net.net_meta, acc)
    return acc


def layers(net: Net) -> tuple[Int16Array, Int16Array, Int16Array, Int32Array]:
    """The net's weights as the file lays them out: the feature weights (K x 768 rows of N,
    king bucket by king bucket), the feature biases (N), the output weights (B x 2N, the side
    to move's half first) and the output biases (B)."""
    hidden, buckets, inputs = net.hidden, net.buckets, net.inputs
    bias_at, out_at = inputs * hidden, (inputs + 1) * hidden
    return (net.net16[:bias_at].reshape(inputs, hidden), net.net16[bias_at:out_at],
            net.net16[out_at:].reshape(buckets, 2 * hidden),
            net.net_meta[NM_OUT_BIAS:NM_OUT_BIAS + buckets].copy())


def bucket_of(pieces: npt.ArrayLike, buckets: int) -> npt.NDArray[np.int64]:
    """``output_bucket`` of every count in ``pieces`` (the trainer's side, on arrays)."""
    counts = np.asarray(pieces, dtype=np.int64)
    return np.clip((counts - 2) * buckets // MAX_PIECES, 0, buckets - 1)


def no_net() -> tuple[Int16Array, Int32Array]:
    """The arrays that mean "hand-written evaluation" (``NM_ENABLED`` 0)."""
    return np.zeros(1, dtype=np.int16), np.zeros(NET_META_SIZE, dtype=np.int32)


def new_accumulators(hidden: int) -> Int16Array:
    """Accumulator rows for every stack row (one row of width 1 when there is no net)."""
    return np.zeros((STACK_SIZE, 2 * max(hidden, 0)) if hidden > 0 else (1, 1), dtype=np.int16)


def encode_net(
    ft_weights: npt.ArrayLike,
    ft_bias: npt.ArrayLike,
    out_weights: npt.ArrayLike,
    out_bias: int | npt.ArrayLike,
    *,
    activation: int = ACT_SCRELU,
    qa: int = QA,
    qb: int = QB,
    scale: int = SCALE,
    king_table: npt.ArrayLike | None = None,
    king_mirror: bool = False,
) -> bytes:
    """The bytes of a net file from quantised (integer) weights; shapes are checked.  The
    output weights are 2N for one bucket, or B x 2N with B biases.  With ``king_table`` (the
    king bucket of each of the 64 squares, ``check_king_table``) the feature weights are
    K x 768 rows, K the table's buckets, and the file is version 3; ``king_mirror`` mirrors
    the board of a side whose king is on files e-h."""
    w1 = np.asarray(ft_weights, dtype=np.int16)
    hidden = w1.shape[1] if w1.ndim == 2 else 0
    table = None if king_table is None else np.asarray(king_table, dtype=np.int64)
    king_buckets = 1 if table is None else check_king_table(table, king_mirror)
    inputs = FEATURES * king_buckets
    b1 = np.asarray(ft_bias, dtype=np.int16)
    w2 = np.asarray(out_weights, dtype=np.int16)
    w2 = w2.reshape(1, -1) if w2.ndim == 1 else w2
    b2 = np.asarray(out_bias, dtype=np.int64).reshape(-1)
    buckets = w2.shape[0]
    if (w1.shape != (inputs, hidden) or b1.shape != (hidden,)
            or w2.shape != (buckets, 2 * hidden) or b2.shape != (buckets,)):
        raise ValueError(
            f"net shapes {w1.shape}, {b1.shape}, {w2.shape}, {b2.shape} are not "
            f"({inputs}, N), (N,), (2N,) or (B, 2N), and (B,)"
        )
    if not 1 <= buckets <= MAX_BUCKETS:
        raise ValueError(f"{buckets} output buckets is outside 1..{MAX_BUCKETS}")
    if table is not None:
        header = (_HEADER.pack(MAGIC, FORMAT_VERSION_KING, hidden, activation, qa, qb, scale)
                  + _BUCKETS.pack(buckets)
                  + _KING.pack(king_buckets, int(king_mirror), *table.tolist()))
    elif buckets == 1:
        header = _HEADER.pack(MAGIC, FORMAT_VERSION_SINGLE, hidden, activation, qa, qb, scale)
    else:
        header = (_HEADER.pack(MAGIC, FORMAT_VERSION, hidden, activation, qa, qb, scale)
                  + _BUCKETS.pack(buckets))
    return (header + w1.astype("<i2").tobytes() + b1.astype("<i2").tobytes()
            + w2.astype("<i2").tobytes() + b2.astype("<i4").tobytes())


def check_king_table(table: npt.ArrayLike, mirror: bool) -> int:
    """The number of king buckets of a table of the 64 own-king squares' buckets (a1 = 0, as
    the perspective sees the board); ``ValueError`` unless it is one: 64 entries, buckets 0 ..
    K-1 each used, K at most ``MAX_KING_BUCKETS``, and with ``mirror`` the same bucket on a
    square and its mirror across the d/e line (a king on files e-h is mirrored: the table's
    a-d half is what is read)."""
    squares = np.asarray(table, dtype=np.int64).reshape(-1)
    if squares.shape != (KING_SQUARES,):
        raise ValueError(f"a king table has {KING_SQUARES} squares, not {squares.size}")
    count = int(squares.max()) + 1
    if squares.min() < 0 or not 1 <= count <= MAX_KING_BUCKETS:
        raise ValueError(f"king buckets must be 0..K-1 with K at most {MAX_KING_BUCKETS}")
    if len(set(squares.tolist())) != count:
        raise ValueError(f"a king table of {count} buckets leaves one of them unused")
    mirrored = squares.reshape(8, 8)[:, ::-1].reshape(-1)
    if mirror and not np.array_equal(squares, mirrored):
        raise ValueError("a king table must give a square and its mirror across the d/e line "
                         "the same bucket")
    return count


def load_net(path: str | Path) -> Net:
    """Read and check a net file; ``NetFileError`` says what is wrong (nothing is half-loaded)."""
    return parse_net(read_net_bytes(path), str(path))


def read_net(value: str | Path) -> tuple[bytes, Net]:
    """The file an ``EvalFile`` value names (``resolve_eval_file``) as read, and its net.  A
    process that hands its net to others (the data factory to its players) passes these bytes
    on, so that a file replaced or removed later changes nothing begun."""
    data = read_net_bytes(resolve_eval_file(value))
    return data, parse_net(data, str(value))


def read_net_bytes(path: str | Path) -> bytes:
    """A net file's bytes, unchecked (``parse_net`` checks them); ``NetFileError`` when it
    cannot be read."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise NetFileError(f"net file {path}: cannot be read ({exc.strerror or exc})") from None


def parse_net(data: bytes, name: str) -> Net:
    """Check the bytes of a net file (``name`` says which in the errors) and build the net."""
    if len(data) < _HEADER.size:
        raise NetFileError(
            f"net file {name}: {len(data)} bytes is shorter than the {_HEADER.size}-byte header"
        )
    magic, version, hidden, activation, qa, qb, scale = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise NetFileError(f"net file {name}: not a Kibitz net (magic {magic!r})")
    if version not in (FORMAT_VERSION_SINGLE, FORMAT_VERSION, FORMAT_VERSION_KING):
        raise NetFileError(
            f"net file {name}: format version {version}, this engine reads "
            f"{FORMAT_VERSION_SINGLE}, {FORMAT_VERSION} and {FORMAT_VERSION_KING}"
        )
    header_size, buckets, king_buckets, king_mirror = _HEADER.size, 1, 1, 0
    king_table = np.zeros(KING_SQUARES, dtype=np.int64)
    if version in (FORMAT_VERSION, FORMAT_VERSION_KING):
        header_size += _BUCKETS.size + (_KING.size if version == FORMAT_VERSION_KING else 0)
        if len(data) < header_size:
            raise NetFileError(f"net file {name}: {len(data)} bytes is shorter than the "
                               f"{header_size}-byte header")
        (buckets,) = _BUCKETS.unpack_from(data, _HEADER.size)
        if not (1 if version == FORMAT_VERSION_KING else 2) <= buckets <= MAX_BUCKETS:
            raise NetFileError(f"net file {name}: {buckets} output buckets is outside "
                               f"{1 if version == FORMAT_VERSION_KING else 2}..{MAX_BUCKETS}")
    if version == FORMAT_VERSION_KING:
        king_buckets, king_mirror, *squares = _KING.unpack_from(data,
                                                                _HEADER.size + _BUCKETS.size)
        king_table = np.asarray(squares, dtype=np.int64)
        if king_mirror not in (0, 1):
            raise NetFileError(f"net file {name}: king mirror flag {king_mirror} is not 0 or 1")
        try:
            counted = check_king_table(king_table, bool(king_mirror))
        except ValueError as exc:
            raise NetFileError(f"net file {name}: {exc}") from None
        if counted != king_buckets:
            raise NetFileError(f"net file {name}: {king_buckets} king buckets declared, but "
                               f"its table uses {counted}")
    if not 1 <= hidden <= MAX_HIDDEN:
        raise NetFileError(f"net file {name}: hidden size {hidden} is outside 1..{MAX_HIDDEN}")
    if activation not in ACTIVATIONS:
        raise NetFileError(f"net file {name}: unknown activation {activation}")
    if not (1 <= qa <= _MAX_QA and 1 <= qb <= _MAX_QA and 1 <= scale <= MAX_SCALE):
        raise NetFileError(f"net file {name}: scales qa={qa} qb={qb} scale={scale} are invalid")
    inputs = FEATURES * king_buckets
    weights = inputs * hidden + hidden + buckets * 2 * hidden
    expected = header_size + 2 * weights + 4 * buckets
    if len(data) != expected:
        shape = (f"N={hidden}" + (f" and {buckets} buckets" if buckets > 1 else "")
                 + (f" and {king_buckets} king buckets" if king_buckets > 1 else ""))
        raise NetFileError(
            f"net file {name}: {len(data)} bytes, but a net with {shape} has {expected} "
            f"({'truncated' if len(data) < expected else 'trailing data'})"
        )
    net16 = np.frombuffer(data, dtype="<i2", count=weights, offset=header_size).astype(np.int16)
    out_biases = np.frombuffer(data, dtype="<i4", count=buckets, offset=expected - 4 * buckets)
    net_meta = np.zeros(NET_META_SIZE, dtype=np.int32)
    net_meta[NM_ENABLED] = 1
    net_meta[NM_HIDDEN] = hidden
    net_meta[NM_ACTIVATION] = activation
    net_meta[NM_QA] = qa
    net_meta[NM_QB] = qb
    net_meta[NM_SCALE] = scale
    net_meta[NM_BUCKETS] = buckets
    net_meta[NM_KING_BUCKETS] = king_buckets
    net_meta[NM_KING_MIRROR] = king_mirror
    net_meta[NM_OUT_BIAS:NM_OUT_BIAS + buckets] = out_biases
    net_meta[NM_KING_TABLE:NM_KING_TABLE + KING_SQUARES] = king_table
    out_weights = net16[(inputs + 1) * hidden:]
    net_meta[NM_SUMS_FIT_INT32] = _screlu_sums_fit_int32(out_weights, hidden, qa)
    # read-only: the engine host loads the net before forking, so games share its pages
    net16.flags.writeable = False
    return Net(net16, net_meta, hashlib.sha256(data).hexdigest()[:8], name)


def _screlu_sums_fit_int32(out_weights: Int16Array, hidden: int, qa: int) -> int:
    """1 when no half's SCReLU sum ``sum(clamp(a, 0, qa)**2 * w)`` can leave int32, whatever the
    accumulators: then the output layer sums in int32 lanes (twice as many per vector as int64,
    and a multiply AVX2 has), else in int64.  The shipped net is at 42% of the bound.  Every
    bucket's halves are checked."""
    bound = max(int(np.abs(out_weights[half * hidden:(half + 1) * hidden].astype(np.int64)).sum())
                for half in range(len(out_weights) // hidden))
    return int(bound * qa * qa <= _INT32_MAX)


# --- compiled --------------------------------------------------------------------------------


# A side's view of the board, one int: (first input of its king bucket) << 6 | the square
# flip, 56 for black (the board seen from its side), xor 7 in a mirroring net when its king
# stands on files e-h (mirrored onto a-d, so the king buckets need cover only half the
# board).  Without king buckets the view is the flip alone.
VIEW_FLIP_MASK = 63


@njit_noalloc_inline
def view(side: int, king_sq: int, net_meta: Int32Array) -> int:
    """The view of ``side`` with its king on mailbox square ``king_sq``."""
    flip = 0 if side == WHITE else 56
    if net_meta[NM_KING_BUCKETS] <= 1:
        return flip
    king = int(SQ64_TABLE[king_sq]) ^ flip
    if net_meta[NM_KING_MIRROR] != 0 and king & 7 >= 4:
        flip ^= 7
        king ^= 7
    return ((int(net_meta[NM_KING_TABLE + king]) * FEATURES) << 6) | flip


@njit_noalloc_inline
def feature_in_view(side: int, side_view: int, piece: int, sq: int) -> int:
    """The input index of ``piece`` (board code) on mailbox square ``sq`` for ``side``, seen
    as ``side_view`` (``view``) says."""
    s = int(SQ64_TABLE[sq]) ^ (side_view & VIEW_FLIP_MASK)
    relation = 0 if (piece >> 3) == side else 1
    return (side_view >> 6) + ((relation * 6 + (piece & 7) - 1) << 6) + s


@njit_noalloc_inline
def _refresh_side(board: BoardArray, row: int, side: int, side_view: int, net16: Int16Array,
                  hidden: int, inputs: int, acc: Int16Array) -> None:
    """``side``'s half of accumulator row ``row`` from scratch: the bias plus every piece."""
    out = acc[row, side * hidden:(side + 1) * hidden]
    bias = net16[inputs * hidden:inputs * hidden + hidden]
    for i in range(hidden):
        out[i] = bias[i]
    for sq in range(21, 99):
        piece = board[sq]
        if piece > 0:
            base = feature_in_view(side, side_view, piece, sq) * hidden
            w = net16[base:base + hidden]
            for i in range(hidden):
                out[i] += w[i]


@njit_noalloc
def refresh(
    board: BoardArray, row: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array
) -> None:
    """Accumulator row ``row`` from scratch: the bias plus every piece on ``board``."""
    hidden = net_meta[NM_HIDDEN]
    inputs = FEATURES * net_meta[NM_KING_BUCKETS]
    for side in range(2):
        king_sq = 0
        for sq in range(21, 99):
            if board[sq] == KING | (side << 3):
                king_sq = sq
        _refresh_side(board, row, side, view(side, king_sq, net_meta), net16, hidden, inputs,
                      acc)


@njit_noalloc_inline
def _source_row(stack: StackArray, row: int) -> int:
    """The row holding the accumulators of ``row``'s position: null moves change no piece."""
    while stack[row, S_MOVE] == NULL_MOVE:
        row -= 1
    return row


@njit_noalloc
def push(
    board: BoardArray,
    stack: StackArray,
    meta: MetaArray,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
) -> None:
    """After ``make_move``: the new row's accumulators from its parent's and the move."""
    _push_row(board, stack, meta[M_PLY], net16, net_meta, acc)


@njit_noalloc_inline
def ensure(
    board: BoardArray,
    stack: StackArray,
    row: int,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
) -> None:
    """Row ``row``'s accumulators up to date, the board standing at its position.

    The search calls this where the row is read: before an evaluation and before a move is
    made from it (so a row's parent is always up to date when the row is made).  A move
    searched but never evaluated (a table cutoff, an evaluation from the cache, a check) then
    costs no update.  A null move's row holds none: its parent's serves (``_source_row``)."""
    if stack[row, S_ACC] == 0 and stack[row, S_MOVE] != NULL_MOVE:
        _push_row(board, stack, row, net16, net_meta, acc)


@njit_noalloc
def _push_row(
    board: BoardArray,
    stack: StackArray,
    row: int,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
) -> None:
    """Row ``row``'s accumulators from its parent's and the move that made it.

    One pass over each side's units, the parent's value with every changed feature's weights
    added or taken away at once (2 to 4 rows): a copy followed by a pass per feature read and
    wrote the row up to five times.  int16 sums wrap alike in any order, so the row is
    exactly the one of separate updates."""
    stack[row, S_ACC] = 1
    hidden = net_meta[NM_HIDDEN]
    parent = _source_row(stack, row - 1)
    move = stack[row, S_MOVE]
    us = 1 - stack[row, S_SIDE]
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    white_view = view(WHITE, stack[row, S_KING], net_meta)
    black_view = view(1, stack[row, S_KING + 1], net_meta)
    us_view = white_view if us == WHITE else black_view
    # the side (0, 1) whose half is made afresh, -1 for none: a king that moved into another
    # bucket or across the d/e line changes every input of its side's
    fresh = -1
    if net_meta[NM_KING_BUCKETS] > 1 and us_view != view(us, stack[parent, S_KING + us],
                                                        net_meta):
        fresh = us
        _refresh_side(board, row, us, us_view, net16, hidden,
                      FEATURES * net_meta[NM_KING_BUCKETS], acc)
    if move & FLAG_CASTLE:
        kto, rto = castling_squares(frm, to, us)
        king = KING | (us << 3)
        rook = ROOK | (us << 3)
        # the king's and the rook's squares may coincide (chess960): the four rows still sum
        _update(acc, parent, row, fresh, white_view, black_view, net16, hidden,
                king, frm, king, kto, rook, to, rook, rto)
        return
    placed = board[to]
    moved = PAWN | (us << 3) if (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK else placed
    if move & FLAG_CAPTURE:
        cap_sq = to
        if move & FLAG_EP:
            cap_sq = to - 10 if us == WHITE else to + 10
        _update(acc, parent, row, fresh, white_view, black_view, net16, hidden, moved, frm,
                placed, to, stack[row, S_CAPTURED], cap_sq, EMPTY, 0)
    else:
        _update(acc, parent, row, fresh, white_view, black_view, net16, hidden, moved, frm,
                placed, to, EMPTY, 0, EMPTY, 0)


@njit_noalloc_inline
def _update(
    acc: Int16Array, parent: int, row: int, fresh: int, white_view: int, black_view: int,
    net16: Int16Array, hidden: int, sub1: int, sub1_sq: int, add1: int, add1_sq: int,
    sub2: int, sub2_sq: int, add2: int, add2_sq: int,
) -> None:
    """Row ``row`` = row ``parent`` - sub1 + add1 (- sub2) (+ add2), features by piece and
    square in each side's view; a piece of ``EMPTY`` is left out, and so is the side
    ``fresh`` (its half already made from the board)."""
    for side in range(2):
        if side == fresh:
            continue
        side_view = white_view if side == WHITE else black_view
        out = acc[row, side * hidden:(side + 1) * hidden]
        src = acc[parent, side * hidden:(side + 1) * hidden]
        s1 = net16[feature_in_view(side, side_view, sub1, sub1_sq) * hidden:][:hidden]
        a1 = net16[feature_in_view(side, side_view, add1, add1_sq) * hidden:][:hidden]
        if add2 != EMPTY:
            s2 = net16[feature_in_view(side, side_view, sub2, sub2_sq) * hidden:][:hidden]
            a2 = net16[feature_in_view(side, side_view, add2, add2_sq) * hidden:][:hidden]
            for i in range(hidden):
                out[i] = src[i] - s1[i] + a1[i] - s2[i] + a2[i]
        elif sub2 != EMPTY:
            s2 = net16[feature_in_view(side, side_view, sub2, sub2_sq) * hidden:][:hidden]
            for i in range(hidden):
                out[i] = src[i] - s1[i] + a1[i] - s2[i]
        else:
            for i in range(hidden):
                out[i] = src[i] - s1[i] + a1[i]


@njit_noalloc_inline
def _screlu_sum_int32(a: Int16Array, w: Int16Array, hidden: int, qa: np.int32) -> int:
    """``sum(clamp(a, 0, qa)**2 * w)`` in int32 (exact when ``NM_SUMS_FIT_INT32``).  Every
    operation is kept int32 (numba would widen int32 arithmetic to int64), so LLVM vectorises
    the loop into 8-lane multiplies."""
    total = _ZERO32
    for i in range(hidden):
        v = np.int32(min(max(np.int32(a[i]), _ZERO32), qa))
        total = np.int32(total + np.int32(np.int32(v * v) * np.int32(w[i])))
    return int(total)


@njit_noalloc_inline
def output_bucket(pieces: int, buckets: int) -> int:
    """The output bucket of a position with ``pieces`` pieces (kings included): 2 .. 32 split
    into ``buckets`` even ranges, fewest pieces first (``bucket_of`` on arrays)."""
    return min(max((pieces - 2) * buckets // MAX_PIECES, 0), buckets - 1)


@njit_noalloc_inline
def evaluate_net(
    stack: StackArray, row: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array
) -> int:
    """The net's score of the position at stack row ``row``, side to move's view (cp)."""
    hidden = net_meta[NM_HIDDEN]
    qa = net_meta[NM_QA]
    src = _source_row(stack, row)
    us = stack[row, S_SIDE]
    buckets = net_meta[NM_BUCKETS]
    bucket = output_bucket(piece_count(stack, row), buckets) if buckets > 1 else 0
    out_base = FEATURES * net_meta[NM_KING_BUCKETS] * hidden + hidden + bucket * 2 * hidden
    total = 0
    screlu = net_meta[NM_ACTIVATION] == ACT_SCRELU
    fits_int32 = net_meta[NM_SUMS_FIT_INT32] != 0
    for half in range(2):
        side = us if half == 0 else 1 - us
        a = acc[src, side * hidden:(side + 1) * hidden]
        w = net16[out_base + half * hidden:out_base + (half + 1) * hidden]
        if screlu and fits_int32:
            total += _screlu_sum_int32(a, w, hidden, qa) // qa
        elif screlu:
            part = np.int64(0)
            for i in range(hidden):
                v = np.int32(min(max(np.int32(a[i]), 0), qa))
                part += np.int64(v * np.int32(w[i])) * v
            total += int(part // qa)
        else:
            sums = np.int32(0)
            for i in range(hidden):
                v = np.int32(min(max(np.int32(a[i]), 0), qa))
                sums += v * np.int32(w[i])
            total += int(sums)
    total += net_meta[NM_OUT_BIAS + bucket]
    return int(total * net_meta[NM_SCALE] // (qa * net_meta[NM_QB]))


# inlined, with ``evaluate_net`` and the drawish scaling, into ``cached_evaluate``: one call
# per evaluation where there were three, each passing its arrays as a dozen words apiece
@njit_noalloc_inline
def net_score(
    stack: StackArray, row: int, net16: Int16Array, net_meta: Int32Array, acc: Int16Array
) -> int:
    """The static score the search uses with a net: the net's, shrunk in drawish pawnless
    endgames as the hand-written evaluation shrinks its own (``evaluate.scale_drawish``), plus
    the variant's term in three-check and king of the hill (the net knows only chess)."""
    score = scale_drawish(stack, row, evaluate_net(stack, row, net16, net_meta, acc))
    if stack[row, S_VARIANT] != VARIANT_CHESS:
        term = variant_eval_white(stack, row)
        score += term if stack[row, S_SIDE] == WHITE else -term
    return score
