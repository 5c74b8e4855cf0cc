"""Transposition table: packing, bounds, replacement, aging, mate-score conversion, hashfull."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine import tt
from engine.jit import uncompiled
from engine.params import MATE, MATE_BOUND

KEY = np.uint64(0x9D39247E33776D41)


def test_entry_count_is_a_power_of_two_within_the_budget() -> None:
    for mb in (1, 3, 16, 100):
        entries = tt.entries_for_mb(mb)
        assert entries & (entries - 1) == 0
        assert entries * tt.ENTRY_BYTES <= mb * 1024 * 1024
        assert entries * 2 * tt.ENTRY_BYTES > mb * 1024 * 1024
    with pytest.raises(ValueError, match="at least"):
        tt.entries_for_mb(0)


def test_store_and_probe_round_trip_every_field() -> None:
    table = tt.new_table(1)
    assert tt.probe(table, KEY) == -1
    move = (1 << 20) | (98 << 7) | 21
    tt.store(table, KEY, move, -1234, 17, tt.BOUND_LOWER, 5)
    word = tt.probe(table, KEY)
    assert word >= 0
    assert tt.entry_move(word) == move
    assert tt.entry_score(word) == -1234
    assert tt.entry_depth(word) == 17
    assert tt.entry_bound(word) == tt.BOUND_LOWER
    assert tt.entry_generation(word) == 5


def test_quiescence_depths_and_extreme_scores_pack() -> None:
    table = tt.new_table(1)
    for score in (MATE - 1, -(MATE - 1), 0):
        for depth in (0, -1, 100):
            tt.store(table, KEY, 0, score, depth, tt.BOUND_EXACT, 0)
            word = tt.probe(table, KEY)
            assert (tt.entry_score(word), tt.entry_depth(word)) == (score, depth)


def test_mate_scores_round_trip_relative_to_the_node() -> None:
    # mate in 5 plies from the root, stored at ply 3: 2 plies from that node
    root_score = MATE - 5
    stored = tt.score_to_tt(root_score, 3)
    assert stored == MATE - 2
    # found again at ply 7 of another line, it is a mate 9 plies from that root
    assert tt.score_from_tt(stored, 7) == MATE - 9
    assert tt.score_from_tt(tt.score_to_tt(-(MATE - 6), 4), 4) == -(MATE - 6)
    assert tt.score_to_tt(150, 9) == 150
    assert tt.score_from_tt(-MATE_BOUND + 1, 9) == -MATE_BOUND + 1


def test_mate_score_survives_the_table() -> None:
    table = tt.new_table(1)
    tt.store(table, KEY, 0, tt.score_to_tt(-(MATE - 8), 6), 4, tt.BOUND_EXACT, 1)
    word = tt.probe(table, KEY)
    assert tt.score_from_tt(tt.entry_score(word), 6) == -(MATE - 8)
    assert tt.score_from_tt(tt.entry_score(word), 2) == -(MATE - 4)


def _same_bucket_keys(table: np.ndarray, count: int) -> list[np.uint64]:
    buckets = table.shape[0] // tt.BUCKET_WORDS
    return [np.uint64(7 + i * buckets) for i in range(count)]


def test_depth_preferred_replacement_keeps_the_deepest_entries() -> None:
    table = tt.new_table(1)
    bucket_keys = _same_bucket_keys(table, tt.BUCKET_SIZE + 1)
    for depth, key in enumerate(bucket_keys[: tt.BUCKET_SIZE], start=5):
        tt.store(table, key, 0, 0, depth, tt.BOUND_EXACT, 1)
    # a fifth position evicts the shallowest of the four
    tt.store(table, bucket_keys[-1], 0, 0, 3, tt.BOUND_EXACT, 1)
    assert tt.probe(table, bucket_keys[0]) == -1
    for key in bucket_keys[1:]:
        assert tt.probe(table, key) >= 0


def test_aging_replaces_stale_deep_entries_first() -> None:
    table = tt.new_table(1)
    bucket_keys = _same_bucket_keys(table, tt.BUCKET_SIZE + 1)
    tt.store(table, bucket_keys[0], 0, 0, 12, tt.BOUND_EXACT, 1)  # deep but old
    for key in bucket_keys[1 : tt.BUCKET_SIZE]:
        tt.store(table, key, 0, 0, 6, tt.BOUND_EXACT, 4)
    tt.store(table, bucket_keys[-1], 0, 0, 2, tt.BOUND_EXACT, 4)
    assert tt.probe(table, bucket_keys[0]) == -1
    assert tt.probe(table, bucket_keys[-1]) >= 0


def test_same_position_keeps_its_move_when_the_new_result_has_none() -> None:
    table = tt.new_table(1)
    tt.store(table, KEY, 1234, 10, 3, tt.BOUND_LOWER, 1)
    tt.store(table, KEY, 0, -40, 4, tt.BOUND_UPPER, 1)
    word = tt.probe(table, KEY)
    assert tt.entry_move(word) == 1234
    assert tt.entry_bound(word) == tt.BOUND_UPPER
    assert tt.entry_score(word) == -40


def test_hashfull_counts_this_generation_and_clear_empties() -> None:
    table = tt.new_table(1)
    assert tt.hashfull(table, 3) == 0
    rng = np.random.default_rng(1)
    for key in rng.integers(1, 2**63, size=20000, dtype=np.int64):
        tt.store(table, np.uint64(key), 0, 0, 1, tt.BOUND_EXACT, 3)
    full = tt.hashfull(table, 3)
    assert 100 < full <= 1000
    assert tt.hashfull(table, 4) == 0
    tt.clear(table)
    assert tt.hashfull(table, 3) == 0


def test_a_clear_gives_up_when_told_and_says_so() -> None:
    table = tt.new_table(64)  # several slices
    table.fill(1)
    abandon = threading.Event()
    abandon.set()  # ``quit`` arrived
    assert not tt.clear(table, abandon)
    assert table.all()
    abandon.clear()
    assert tt.clear(table, abandon)
    assert not table.any()


def test_a_new_table_is_empty_even_when_its_writing_is_abandoned() -> None:
    abandon = threading.Event()
    abandon.set()
    table = tt.new_table(64, abandon)
    assert table.shape[0] == tt.entries_for_mb(64) * tt.ENTRY_WORDS
    assert not table.any()


def test_buckets_fill_whole_cache_lines() -> None:
    for mb in (1, 16):
        table = tt.new_table(mb)
        assert table.ctypes.data % tt.CACHE_LINE_BYTES == 0
        assert tt.BUCKET_WORDS * table.itemsize == tt.CACHE_LINE_BYTES
        assert table.shape[0] == tt.entries_for_mb(mb) * tt.ENTRY_WORDS
        assert not table.any()


def test_prefetching_a_bucket_changes_nothing() -> None:
    table = tt.new_table(1)
    tt.store(table, KEY, 77, 5, 3, tt.BOUND_EXACT, 1)
    before = table.copy()
    tt.prefetch_bucket(table, KEY)  # compiled: a cache hint only
    uncompiled(tt.prefetch_bucket)(table, KEY)  # plain Python: nothing at all
    assert np.array_equal(table, before)
