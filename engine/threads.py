"""The search threads: each one's own tables (its work record) and the Lazy SMP pool.

Every thread searches with a record of its own arrays (``WORK_DTYPE``: move lists, ordering
heuristics, PV, counters), which the compiled search receives as a single pointer; the
transposition table is the one thing they share.  The pool holds the main thread's tables and
each helper's, with a copy of the root per helper, allocated once per thread count; helper
threads run only between ``ThreadPool.start`` and ``ThreadPool.stop``.  Helpers skip some
iterations (``skips_depth``), so the threads spread over depths, and the line played is the
main thread's unless a helper completed a deeper iteration with a better score
(``chosen_line``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np

from engine import nnue
from engine.board import Position
from engine.constants import MAX_MOVES, Int32Array, Int64Array, KeyArray
from engine.evaluate import SCRATCH_SIZE
from engine.info import RootLine
from engine.movepick import CAPTURE_HISTORY_SIZE, CONT_SIZE, NO_CONT, SEE_BUFFER_SIZE
from engine.nnue import Int16Array
from engine.params import EVAL_CACHE_ENTRIES_LOG2, MAX_PLY, SMP_SKIP_PHASE, SMP_SKIP_SIZE

# info[] fields shared between the compiled search and its Python driver
I_NODES = 0
I_SELDEPTH = 1
I_NODE_LIMIT = 2  # 0: no limit
I_GENERATION = 3
I_ITERATION = 4  # depth of the running iteration
I_ROOT_ROW = 5  # stack row of the root position
I_STOPPED = 6
I_ROOT_MOVES = 7  # number of entries in root_moves (0: every legal move)
I_ROOT_UPDATED = 8  # the root's best move was set during the running call
INFO_SIZE = 16

HELPER_THREAD_NAME = "search-helper"  # helper thread i is named "search-helper-i"


def _work_dtype() -> np.dtype[np.void]:
    """The record of one searcher's own arrays (``SearchTables``), in the order of use."""
    plies = MAX_PLY + 1
    return np.dtype(
        [
            ("moves", np.int32, (plies, MAX_MOVES)),
            ("move_scores", np.int32, (plies, MAX_MOVES)),
            ("killers", np.int32, (plies, 2)),
            ("history", np.int32, (2, 128, 128)),
            ("counters", np.int32, (128, 128)),
            ("cont_history", np.int16, (CONT_SIZE + 1, CONT_SIZE)),
            ("capture_history", np.int16, (CAPTURE_HISTORY_SIZE,)),
            ("ply_moves", np.int32, (plies,)),  # continuation index of the move made at each ply
            ("pv", np.int32, (plies, plies)),
            ("pv_len", np.int32, (plies,)),
            ("evals", np.int32, (plies,)),
            ("info", np.int64, (INFO_SIZE,)),
            ("scratch", np.int64, (SCRATCH_SIZE,)),
            ("eval_cache", np.uint64, (1 << EVAL_CACHE_ENTRIES_LOG2,)),
            ("see_buf", np.int64, (SEE_BUFFER_SIZE,)),
            ("root_moves", np.int32, (MAX_MOVES,)),
        ],
        align=True,
    )


WORK_DTYPE = _work_dtype()


class WorkRecord(Protocol):
    """One element of a ``WORK_DTYPE`` array (a numpy record), as the compiled search reads
    it: each field is an array viewed in place."""

    moves: Int32Array
    move_scores: Int32Array
    killers: Int32Array
    history: Int32Array
    counters: Int32Array
    cont_history: Int16Array
    capture_history: Int16Array
    ply_moves: Int32Array
    pv: Int32Array
    pv_len: Int32Array
    evals: Int32Array
    info: Int64Array
    scratch: Int64Array
    eval_cache: KeyArray
    see_buf: Int64Array
    root_moves: Int32Array


class SearchTables:
    """The mutable arrays of one search thread (ordering heuristics, PV, counters).

    They live in one record (``work``), which the compiled search receives as a single
    pointer; the attributes are views of its fields, for the Python side.
    """

    def __init__(self, acc: Int16Array | None = None) -> None:
        # a record array: its element reads its fields as attributes in plain Python too
        # (``NUMBA_DISABLE_JIT=1``), and numba types it as the plain structured element
        self._store = np.zeros(1, dtype=WORK_DTYPE).view(np.recarray)
        self.work = cast(WorkRecord, self._store[0])
        fields = self._store[0]
        self.moves: Int32Array = fields["moves"]
        self.move_scores: Int32Array = fields["move_scores"]
        self.killers: Int32Array = fields["killers"]
        self.history: Int32Array = fields["history"]
        self.counters: Int32Array = fields["counters"]
        self.cont_history: Int16Array = fields["cont_history"]
        self.capture_history: Int16Array = fields["capture_history"]
        self.ply_moves: Int32Array = fields["ply_moves"]
        self.pv: Int32Array = fields["pv"]
        self.pv_len: Int32Array = fields["pv_len"]
        self.evals: Int32Array = fields["evals"]
        self.info: Int64Array = fields["info"]
        self.scratch: Int64Array = fields["scratch"]
        self.eval_cache: KeyArray = fields["eval_cache"]
        self.see_buf: Int64Array = fields["see_buf"]
        self.root_moves: Int32Array = fields["root_moves"]
        self.ply_moves.fill(NO_CONT)
        self.acc: Int16Array = acc if acc is not None else nnue.new_accumulators(0)

    @property
    def nbytes(self) -> int:
        """The memory these tables take: the record and the accumulators."""
        return int(self._store.nbytes + self.acc.nbytes)

    def clear(self) -> None:
        self.killers.fill(0)
        self.history.fill(0)
        self.counters.fill(0)
        self.cont_history.fill(0)
        self.capture_history.fill(0)


@dataclass
class ThreadLine:
    """The line a search thread would play: its moves, and the deepest iteration it completed."""

    moves: list[int]
    texts: tuple[str, ...]
    score: int = 0
    depth: int = 0  # 0: no iteration completed
    thread: int = 0  # 0: the main thread, i: helper thread i
    lines: tuple[RootLine, ...] = ()  # the MultiPV lines of ``depth``, best first


def chosen_line(main: ThreadLine, helpers: list[ThreadLine]) -> ThreadLine:
    """The line played: a helper's that completed a deeper iteration with a better score than
    the best one so far (the main thread's at first), else the main thread's."""
    best = main
    for helper in helpers:
        if helper.depth > best.depth and helper.score > best.score and helper.texts:
            best = helper
    return best


def skips_depth(helper: int, depth: int) -> bool:
    """Whether helper thread ``helper`` (1, 2, ...) leaves the iteration of ``depth`` out."""
    k = (helper - 1) % len(SMP_SKIP_SIZE)
    return ((depth + SMP_SKIP_PHASE[k]) // SMP_SKIP_SIZE[k]) % 2 == 1


# A helper's search: (its index, its tables, its copy of the root, the line it fills in)
HelperSearch = Callable[[int, SearchTables, Position, ThreadLine], None]


class ThreadPool:
    """The tables of every search thread, and the helper threads while a search runs.

    Helpers search with compiled code that releases the GIL, so they run in parallel with the
    main thread (the caller of ``start``), which alone reports and decides when to stop.
    """

    def __init__(self, threads: int) -> None:
        self.main = SearchTables()
        # allocated once per thread count: each helper's tables and its copy of the root
        self.helpers: list[SearchTables] = []
        self.roots: list[Position] = []
        self.running: list[threading.Thread] = []  # alive only between start and stop
        # the helpers' stop flag: set by the main thread once it stops, for whatever reason
        self.stop_flag = np.zeros(1, dtype=np.int64)
        self.resize(threads, 0)

    @property
    def count(self) -> int:
        return 1 + len(self.helpers)

    def resize(self, threads: int, hidden: int) -> None:
        """Tables for ``threads`` threads (not during a search); new helpers get accumulators
        for a net of ``hidden`` units (0: the hand-written evaluation)."""
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        del self.helpers[threads - 1 :]
        del self.roots[threads - 1 :]
        while len(self.helpers) < threads - 1:
            self.helpers.append(SearchTables(acc=nnue.new_accumulators(hidden)))
            self.roots.append(Position())

    def all_tables(self) -> list[SearchTables]:
        return [self.main, *self.helpers]

    def set_net(self, hidden: int) -> None:
        """Accumulators for a net of ``hidden`` units, and evaluation caches emptied (their
        scores came from the other evaluation)."""
        for t in self.all_tables():
            t.acc = nnue.new_accumulators(hidden)
            t.eval_cache.fill(0)

    def clear(self) -> None:
        for t in self.all_tables():
            t.clear()

    def nodes(self) -> int:
        """The nodes of the running (or last) search, summed over its threads."""
        return sum(int(t.info[I_NODES]) for t in self.all_tables())

    def start(self, position: Position, search: HelperSearch) -> list[ThreadLine]:
        """Start a thread per helper running ``search`` on a copy of the root, its tables set
        up as the main thread's; the lines they fill in."""
        main = self.main
        self.stop_flag[0] = 0
        lines: list[ThreadLine] = []
        for index, (t, root) in enumerate(zip(self.helpers, self.roots, strict=True), start=1):
            root.copy_from(position)
            t.root_moves[:] = main.root_moves
            t.info[:] = 0
            for slot in (I_GENERATION, I_NODE_LIMIT, I_ROOT_MOVES):
                t.info[slot] = main.info[slot]
            t.pv_len.fill(0)
            line = ThreadLine([], (), thread=index)
            lines.append(line)
            thread = threading.Thread(
                target=search,
                args=(index, t, root, line),
                name=f"{HELPER_THREAD_NAME}-{index}",
                daemon=True,
            )
            self.running.append(thread)
            thread.start()
        return lines

    def stop(self) -> None:
        """Stop every helper and wait until it has ended."""
        self.stop_flag[0] = 1
        for thread in self.running:
            thread.join()
        self.running.clear()
