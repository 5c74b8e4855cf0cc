"""Evaluation cache: static scores kept by Zobrist key, so a position met again is not rescored.

The search meets the same positions again and again (the next iteration, transpositions,
quiescence leaves), and the static evaluation is about half of the work per node.  The score
depends on the position alone, so a cached score is exactly the one ``evaluate`` would return:
the cache changes speed, never the search (the bench node count stays the same).

One ``uint64`` word per entry, always replaced: the key's bits above ``VALUE_BITS`` with the
score (offset to be positive, so an empty word of 0 never matches) in the bits below.  The
entry is found by the key's low bits, so a hit checks 44 + log2(entries) bits of the key.
"""

from __future__ import annotations

import numpy as np

from engine.constants import (
    S_VARIANT,
    BoardArray,
    Int64Array,
    KeyArray,
    StackArray,
)
from engine.evaluate import evaluate
from engine.jit import njit_noalloc, prefetch
from engine.nnue import NM_ENABLED, Int16Array, Int32Array, ensure, net_score
from engine.params import EVAL_CACHE_ENTRIES_LOG2, NET_PLAYS_VARIANT

VALUE_BITS = 20
_VALUE_OFFSET = 1 << (VALUE_BITS - 1)
_VALUE_MASK = np.uint64((1 << VALUE_BITS) - 1)
_KEY_MASK = ~_VALUE_MASK
_OFFSET = np.uint64(_VALUE_OFFSET)
_NET_PLAYS = np.array(NET_PLAYS_VARIANT, dtype=np.bool_)


def new_cache(entries_log2: int = EVAL_CACHE_ENTRIES_LOG2) -> KeyArray:
    """An empty cache of ``2 ** entries_log2`` words (entries_log2 at most ``VALUE_BITS``)."""
    if not 0 <= entries_log2 <= VALUE_BITS:
        raise ValueError(f"eval cache size 2**{entries_log2} is outside 2**0 .. 2**{VALUE_BITS}")
    return np.zeros(1 << entries_log2, dtype=np.uint64)


@njit_noalloc
def prefetch_entry(cache: KeyArray, key: np.uint64) -> None:
    """Start loading ``key``'s word (memory prefetch, as for the transposition table)."""
    prefetch(cache, int(key & np.uint64(cache.shape[0] - 1)))


@njit_noalloc
def cached_evaluate(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    row: int,
    scratch: Int64Array,
    cache: KeyArray,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
) -> int:
    """The static score of the position at stack row ``row``, through the cache: the net's
    when one is loaded (``engine.nnue``) and plays these rules (``NET_PLAYS_VARIANT``), else
    ``evaluate``'s."""
    key = keys[row]
    index = key & np.uint64(cache.shape[0] - 1)
    word = cache[index]
    if word & _VALUE_MASK != np.uint64(0) and (word & _KEY_MASK) == (key & _KEY_MASK):
        return int(word & _VALUE_MASK) - _VALUE_OFFSET
    if net_meta[NM_ENABLED] != 0 and _NET_PLAYS[stack[row, S_VARIANT]]:
        ensure(board, stack, row, net16, net_meta, acc)
        score = net_score(stack, row, net16, net_meta, acc)
    else:
        score = evaluate(board, stack, row, scratch)
    # Scores beyond the packed range (never seen in play) are simply not cached.
    if -_VALUE_OFFSET < score < _VALUE_OFFSET:
        cache[index] = (key & _KEY_MASK) | np.uint64(score + _VALUE_OFFSET)
    return score
