"""Transposition table: Zobrist-keyed buckets of packed entries in one numpy array.

Layout: one ``uint64`` array of word pairs, the full Polyglot key of the stored position XOR its
packed data word, then the data word.  Entries are grouped in buckets of ``BUCKET_SIZE``
consecutive pairs; the low bits of the key pick the bucket.  The number of entries is a power
of two so the bucket index is a mask, never a division.  Cache-line buckets: a bucket is 64
bytes and the array starts on a 64-byte boundary, so a probe and the store after it touch one
cache line (keys and data in two arrays cost a memory access each, and half the buckets of an
unaligned array straddle two lines).

Packed data word (always below 2**63, so as an ``int64`` it is non-negative and ``-1`` can mean
"miss"):

======  ==========================================================
bits    field
======  ==========================================================
0-31    best move (the board's move encoding; 0 = none)
32-47   score + ``SCORE_BIAS`` (node-relative mate scores)
48-55   depth + ``DEPTH_BIAS`` (quiescence entries have depth <= 0)
56-57   bound: ``BOUND_EXACT`` / ``BOUND_LOWER`` / ``BOUND_UPPER``
58-62   search generation (aging), modulo ``GENERATION_CYCLE``
======  ==========================================================

Lockless sharing (Hyatt and Mann's XOR scheme): search threads write the table at once without
a lock, so a reader may meet a torn entry, the key word of one store and the data word of
another.  The key word holds ``key ^ data``, so such a pair reads back as a key no position
has (but by a 2**-64 chance) and the probe misses.  A table move is never played as read:
the search only ranks the moves it generated itself by it (``movepick``), so even a move of
another position could never be searched.

Mate scores are stored relative to the node (distance from the node, not from the root) so an
entry stays correct wherever the position recurs in the tree; ``score_to_tt`` and
``score_from_tt`` convert at the boundary.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from engine.jit import njit_noalloc, prefetch
from engine.params import MATE_BOUND, TT_AGE_WEIGHT, TT_KEEP_DEPTH_MARGIN

TableArray = npt.NDArray[np.uint64]

BUCKET_SIZE = 4
ENTRY_BYTES = 16  # one uint64 key + one data word
ENTRY_WORDS = 2  # the key at an even index, its data word after it
BUCKET_WORDS = BUCKET_SIZE * ENTRY_WORDS
CACHE_LINE_BYTES = 64

BOUND_NONE = 0
BOUND_EXACT = 1
BOUND_LOWER = 2  # fail high: the true score is >= the stored score
BOUND_UPPER = 3  # fail low: the true score is <= the stored score

SCORE_BIAS = 32768
DEPTH_BIAS = 8
GENERATION_CYCLE = 32

_MOVE_MASK = np.int64(0xFFFFFFFF)
_SCORE_SHIFT = np.int64(32)
_DEPTH_SHIFT = np.int64(48)
_BOUND_SHIFT = np.int64(56)
_GEN_SHIFT = np.int64(58)
_MASK16 = np.int64(0xFFFF)
_MASK8 = np.int64(0xFF)
_MASK5 = np.int64(0x1F)
_MASK2 = np.int64(0x3)

MIN_HASH_MB = 1
MAX_HASH_MB = 4096
DEFAULT_HASH_MB = 64
# Words emptied between two looks at whether to give up (16 MB: a few milliseconds), so a
# ``quit`` never waits for the rest of a 4 GB clear.
CLEAR_SLICE_WORDS = 2 * 1024 * 1024


def entries_for_mb(hash_mb: int) -> int:
    """The largest power-of-two entry count (at least one bucket) that fits in ``hash_mb`` MB."""
    if hash_mb < MIN_HASH_MB:
        raise ValueError(f"hash size must be at least {MIN_HASH_MB} MB, got {hash_mb}")
    budget = hash_mb * 1024 * 1024 // ENTRY_BYTES
    entries = BUCKET_SIZE
    while entries * 2 <= budget:
        entries *= 2
    return entries


def new_table(hash_mb: int, abandon: threading.Event | None = None) -> TableArray:
    """Allocate an empty table of ``hash_mb`` megabytes (rounded down to a power of two).

    Every page is written now: a lazily mapped table would pay its page faults (and the
    kernel's zeroing of huge pages) during the first search, on the clock.  ``abandon`` set
    (``quit`` arrived) stops the writing: the table is empty all the same, its pages come
    zeroed from the kernel.
    """
    words = entries_for_mb(hash_mb) * ENTRY_WORDS
    line_words = CACHE_LINE_BYTES // 8
    raw = np.zeros(words + line_words, dtype=np.uint64)
    # the view starts on a cache line, so every bucket fills exactly one
    skip = (-raw.ctypes.data % CACHE_LINE_BYTES) // 8
    table = raw[skip : skip + words]
    clear(table, abandon)
    return table


def clear(table: TableArray, abandon: threading.Event | None = None) -> bool:
    """Empty the table (``ucinewgame`` / ``Clear Hash``), a slice at a time; False when
    ``abandon`` was set before the end (the slices not reached keep their entries, each
    still valid for its own position)."""
    for start in range(0, table.shape[0], CLEAR_SLICE_WORDS):
        if abandon is not None and abandon.is_set():
            return False
        table[start : start + CLEAR_SLICE_WORDS].fill(0)
    return True


@njit_noalloc
def pack(move: int, score: int, depth: int, bound: int, generation: int) -> np.int64:
    return (
        (np.int64(move) & _MOVE_MASK)
        | (np.int64(score + SCORE_BIAS) << _SCORE_SHIFT)
        | (np.int64(depth + DEPTH_BIAS) << _DEPTH_SHIFT)
        | (np.int64(bound) << _BOUND_SHIFT)
        | (np.int64(generation % GENERATION_CYCLE) << _GEN_SHIFT)
    )


@njit_noalloc
def entry_move(word: np.int64) -> int:
    return int(word & _MOVE_MASK)


@njit_noalloc
def entry_score(word: np.int64) -> int:
    return int((word >> _SCORE_SHIFT) & _MASK16) - SCORE_BIAS


@njit_noalloc
def entry_depth(word: np.int64) -> int:
    return int((word >> _DEPTH_SHIFT) & _MASK8) - DEPTH_BIAS


@njit_noalloc
def entry_bound(word: np.int64) -> int:
    return int((word >> _BOUND_SHIFT) & _MASK2)


@njit_noalloc
def entry_generation(word: np.int64) -> int:
    return int((word >> _GEN_SHIFT) & _MASK5)


@njit_noalloc
def score_to_tt(score: int, ply: int) -> int:
    """Root-relative mate score -> node-relative (distance counted from this node)."""
    if score >= MATE_BOUND:
        return score + ply
    if score <= -MATE_BOUND:
        return score - ply
    return score


@njit_noalloc
def score_from_tt(score: int, ply: int) -> int:
    """Node-relative mate score -> root-relative, for a node ``ply`` plies from the root."""
    if score >= MATE_BOUND:
        return score - ply
    if score <= -MATE_BOUND:
        return score + ply
    return score


@njit_noalloc
def _bucket_start(table: TableArray, key: np.uint64) -> int:
    """Index of the first word of ``key``'s bucket."""
    mask = np.uint64(table.shape[0] // BUCKET_WORDS - 1)
    return int(key & mask) * BUCKET_WORDS


@njit_noalloc
def prefetch_bucket(table: TableArray, key: np.uint64) -> None:
    """Start loading ``key``'s bucket (one cache line) ahead of its probe."""
    prefetch(table, _bucket_start(table, key))


@njit_noalloc
def probe(table: TableArray, key: np.uint64) -> np.int64:
    """The packed entry stored for ``key``, or -1 on a miss."""
    start = _bucket_start(table, key)
    for i in range(start, start + BUCKET_WORDS, ENTRY_WORDS):
        # each word read once: another thread may rewrite the entry between two reads
        data = table[i + 1]
        if table[i] ^ data == key and data != 0:
            return np.int64(data)
    return np.int64(-1)


@njit_noalloc
def _write(table: TableArray, index: int, key: np.uint64, word: np.int64) -> None:
    """Write the entry at ``index``: the key word (``key ^ data``), then the data word."""
    data = np.uint64(word)
    table[index] = key ^ data
    table[index + 1] = data


@njit_noalloc
def store(
    table: TableArray,
    key: np.uint64,
    move: int,
    score: int,
    depth: int,
    bound: int,
    generation: int,
) -> None:
    """Depth-preferred replacement with aging.

    The entry of the same position keeps a bound from the current search that is more than
    ``TT_KEEP_DEPTH_MARGIN`` plies deeper unless the new result is exact (a quiescence bound
    never overwrites a deep one); otherwise it is
    overwritten, keeping its best move when the new result has none.  A new position takes the
    slot with the lowest ``depth - TT_AGE_WEIGHT * age`` in the bucket, so stale deep entries from
    earlier moves of the game are replaced before fresh ones.
    """
    start = _bucket_start(table, key)
    gen = generation % GENERATION_CYCLE
    victim = start
    victim_worth = 1 << 30
    for i in range(start, start + BUCKET_WORDS, ENTRY_WORDS):
        data = table[i + 1]
        word = np.int64(data)
        if table[i] ^ data == key and word != 0:
            old_depth = entry_depth(word)
            if (bound != BOUND_EXACT and old_depth > depth + TT_KEEP_DEPTH_MARGIN
                    and entry_generation(word) == gen):
                return
            if move == 0:
                move = entry_move(word)
            _write(table, i, key, pack(move, score, depth, bound, gen))
            return
        if word == 0:
            worth = -(1 << 20)
        else:
            age = (gen - entry_generation(word)) % GENERATION_CYCLE
            worth = entry_depth(word) - TT_AGE_WEIGHT * age
        if worth < victim_worth:
            victim_worth = worth
            victim = i
    _write(table, victim, key, pack(move, score, depth, bound, gen))


@njit_noalloc
def hashfull(table: TableArray, generation: int) -> int:
    """Per-mille of the first 1000 entries written during the current search generation."""
    gen = generation % GENERATION_CYCLE
    sample = min(1000, table.shape[0] // ENTRY_WORDS)
    used = 0
    for i in range(sample):
        word = np.int64(table[ENTRY_WORDS * i + 1])
        if word != 0 and entry_generation(word) == gen:
            used += 1
    return int(used * 1000 // sample)
