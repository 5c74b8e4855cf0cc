"""Evaluation cache: a cached score is exactly the evaluation, and clashing keys never mix."""

from __future__ import annotations

import numpy as np
import pytest

from engine.board import Position
from engine.evalcache import VALUE_BITS, cached_evaluate, new_cache, prefetch_entry
from engine.evaluate import evaluate, new_scratch
from engine.jit import uncompiled
from engine.nnue import new_accumulators, no_net
from tests.engine.test_evaluate import sample_positions

NO_NET = (*no_net(), new_accumulators(0))  # the hand-written evaluation


def _score(position: Position, cache: np.ndarray) -> tuple[int, int]:
    board, stack, keys, meta = position.arrays
    row = int(meta[0])
    scratch = new_scratch()
    return (
        int(cached_evaluate(board, stack, keys, row, scratch, cache, *NO_NET)),
        int(evaluate(board, stack, row, scratch)),
    )


def test_cached_scores_equal_the_evaluation_on_a_miss_and_on_a_hit() -> None:
    cache = new_cache(12)
    positions = [Position.from_fen(fen) for fen in sample_positions()[:200]]
    for position in positions:  # misses, filling the cache
        cached, plain = _score(position, cache)
        assert cached == plain
    assert np.count_nonzero(cache) > 100
    for position in positions:  # mostly hits now
        cached, plain = _score(position, cache)
        assert cached == plain


def test_a_one_entry_cache_never_returns_another_positions_score() -> None:
    # every key lands on the single word: each probe is a clash with the position before
    cache = new_cache(0)
    scores = set()
    for fen in sample_positions()[:100]:
        cached, plain = _score(Position.from_fen(fen), cache)
        assert cached == plain
        scores.add(plain)
    assert len(scores) > 20  # the positions really differ


def test_a_key_differing_only_in_the_checked_bits_misses() -> None:
    position = Position.from_fen("4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
    cache = new_cache(4)
    board, stack, keys, meta = position.arrays
    row = int(meta[0])
    real = int(cached_evaluate(board, stack, keys, row, new_scratch(), cache, *NO_NET))
    # forge the stored word so it holds a wrong score under a key that differs in a high bit
    index = int(keys[row]) & 15
    forged_key = int(keys[row]) ^ (1 << 40)
    value = (forged_key >> VALUE_BITS << VALUE_BITS) | ((-777) + (1 << (VALUE_BITS - 1)))
    cache[index] = np.uint64(value)
    assert int(cached_evaluate(board, stack, keys, row, new_scratch(), cache, *NO_NET)) == real


def test_cache_size_is_checked() -> None:
    with pytest.raises(ValueError, match="eval cache size"):
        new_cache(VALUE_BITS + 1)


def test_prefetching_an_entry_changes_nothing() -> None:
    position = Position.from_fen("4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
    cache = new_cache(4)
    board, stack, keys, meta = position.arrays
    cached_evaluate(board, stack, keys, int(meta[0]), new_scratch(), cache, *NO_NET)
    before = cache.copy()
    prefetch_entry(cache, keys[0])  # compiled: a cache hint only
    uncompiled(prefetch_entry)(cache, keys[0])  # plain Python: nothing at all
    assert np.array_equal(cache, before)
