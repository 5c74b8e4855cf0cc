"""Lazy SMP: helper threads share the table, return legal moves and never outlive a search."""

from __future__ import annotations

import io
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import chess
import numba
import numpy as np
import numpy.typing as npt
import pytest

from engine import nnue, tt
from engine.board import Position
from engine.constants import MAX_MOVES
from engine.info import Iteration, SearchResult
from engine.params import DEFAULT_EVAL_FILE, MATE
from engine.search import Searcher, SearchShape
from engine.threads import (
    HELPER_THREAD_NAME,
    I_NODES,
    SearchTables,
    ThreadLine,
    chosen_line,
    skips_depth,
)
from engine.timeman import GoLimits, TimeBudget
from engine.uci import UciEngine, max_threads
from tests.engine.conftest import load_perft_epd, random_boards, uci_set
from tests.engine.uci_process import ROOT, UciProcess

UNLIMITED = TimeBudget(None, None)
PERFT_SUITE = load_perft_epd("perftsuite126.epd") + load_perft_epd("perft_cpw6.epd")
WAIT_S = 120.0  # a bound for event waits, far above any wait here: a hang fails, never a race


def _helpers_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(HELPER_THREAD_NAME)]


def _assert_legal_result(board: chess.Board, result: SearchResult) -> None:
    legal = uci_set(board)
    if not legal:
        assert result.best_move is None
        return
    assert result.best_move in legal, (board.fen(), result)
    walker = board.copy()
    for text in result.pv:  # the whole line, ponder move included, is legal
        move = chess.Move.from_uci(text)
        assert move in walker.legal_moves, (board.fen(), result.pv)
        walker.push(move)
    assert result.pv[0] == result.best_move
    if result.ponder_move is not None:
        assert result.pv[1] == result.ponder_move


@pytest.fixture(scope="module", params=[2, 4])
def searcher(request: pytest.FixtureRequest) -> Iterator[Searcher]:
    yield Searcher(1, threads=request.param)
    assert not _helpers_alive()


def test_threads_play_a_legal_move_in_every_perft_position(searcher: Searcher) -> None:
    for case in PERFT_SUITE:
        position = Position.from_fen(case.fen)
        result = searcher.think(position, GoLimits(depth=3), UNLIMITED, time.monotonic(),
                                lambda _: None)
        _assert_legal_result(chess.Board(case.fen), result)
        assert position.fen() == case.fen  # the root is left as it was
        assert not searcher.pool.running and not _helpers_alive()


def test_threads_play_a_legal_move_in_random_positions(searcher: Searcher) -> None:
    # node limits (shared by the threads) stop the main thread at any point of an iteration,
    # and let a helper that went deeper supply the move (about one search in twenty, as the
    # threads happen to be scheduled: that a helper's line is played at all is tested below
    # without the scheduler)
    boards = random.Random(48).sample(random_boards(48, 20, False, 120), 200)
    for number, board in enumerate(boards):
        position = Position.from_fen(board.fen())
        nodes = 1000 + 500 * (number % 5)
        limits = GoLimits(nodes=nodes)
        iterations: list[Iteration] = []
        result = searcher.think(position, limits, UNLIMITED, time.monotonic(), iterations.append)
        _assert_legal_result(board, result)
        assert result.nodes <= nodes + searcher.threads * 1024
        assert not searcher.pool.running and not _helpers_alive()
        if result.thread > 0:  # the helper's line is reported last, as the move played
            assert (iterations[-1].depth, iterations[-1].pv) == (result.depth, result.pv)


def _line(depth: int, score: int, thread: int, texts: tuple[str, ...] = ("e2e4",)) -> ThreadLine:
    return ThreadLine([], texts, score=score, depth=depth, thread=thread)


def test_a_helper_line_is_chosen_only_deeper_and_better() -> None:
    main = _line(5, 20, 0)
    assert chosen_line(main, []) is main
    deeper_better = _line(6, 30, 1)
    assert chosen_line(main, [deeper_better]) is deeper_better
    for helper in (_line(6, 20, 1), _line(5, 90, 1), _line(4, 90, 1), _line(6, 30, 1, ())):
        # as good but deeper, better at the same depth, better but shallower, no move
        assert chosen_line(main, [helper]) is main, helper
    # the helpers are compared with the best line so far, not with the main thread's alone
    deepest = _line(8, 40, 2)
    assert chosen_line(main, [deeper_better, deepest]) is deepest
    assert chosen_line(main, [deepest, deeper_better]) is deepest


class _ShallowMainThread(Searcher):
    """A searcher whose main thread waits for its helpers to finish their iterations, then
    offers a one-ply line scored as lost: the helpers' deeper lines must be played."""

    def _deepen(self, position: Position, limits: GoLimits, budget: TimeBudget,
                started_s: float, report: Callable[[Iteration], None] | None,
                clock_started: Callable[[], float | None] | None, legal: list[int],
                max_depth: int, shape: SearchShape) -> ThreadLine:
        for thread in self.pool.running:  # each ends by itself at max_depth
            thread.join(WAIT_S)
        return ThreadLine([legal[0]], (position.move_to_uci(legal[0]),), score=-MATE, depth=1)


def test_a_deeper_better_helper_line_is_played() -> None:
    searcher = _ShallowMainThread(1, threads=3)
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    iterations: list[Iteration] = []
    result = searcher.think(Position.from_fen(board.fen()), GoLimits(depth=4), UNLIMITED,
                            time.monotonic(), iterations.append)
    _assert_legal_result(board, result)
    assert result.thread > 0 and result.depth >= 2 and result.score > -MATE
    # the helper's line is reported last, as the move played
    assert (iterations[-1].depth, iterations[-1].pv) == (result.depth, result.pv)
    assert not _helpers_alive()


def test_nodes_are_summed_over_the_threads() -> None:
    searcher = Searcher(1, threads=3)
    nodes: list[int] = []
    result = searcher.think(Position.startpos(), GoLimits(depth=6), UNLIMITED, time.monotonic(),
                            lambda iteration: nodes.append(iteration.nodes))
    per_thread = [int(t.info[I_NODES]) for t in searcher.pool.all_tables()]
    assert result.nodes == sum(per_thread)
    assert nodes == sorted(nodes) and nodes[-1] <= result.nodes


def test_helpers_spread_over_the_depths() -> None:
    # helper 1 takes the even iterations, helper 2 the odd ones: between them every depth
    assert [d for d in range(1, 9) if not skips_depth(1, d)] == [2, 4, 6, 8]
    assert [d for d in range(1, 9) if not skips_depth(2, d)] == [1, 3, 5, 7]
    for helper in range(1, 40):
        assert any(not skips_depth(helper, d) for d in range(1, 20))


def test_thread_count_changes_and_a_helper_costs_under_5_mb() -> None:
    searcher = Searcher(1, threads=4)
    assert searcher.threads == 4 and len(searcher.pool.helpers) == 3
    kept = searcher.pool.helpers[0]
    searcher.set_threads(2)
    assert searcher.threads == 2 and searcher.pool.helpers == [kept]  # allocated once
    with pytest.raises(ValueError, match="at least 1"):
        searcher.set_threads(0)
    # what a helper adds with the shipped net: its tables (accumulators included) and its copy
    # of the root position
    tables = SearchTables(acc=nnue.new_accumulators(nnue.net_for(DEFAULT_EVAL_FILE).hidden))
    helper_bytes = tables.nbytes
    helper_bytes += sum(array.nbytes for array in Position.startpos().arrays)
    assert helper_bytes < 5 * 1024 * 1024


# -- the shared table under concurrent writes ---------------------------------------------------

Keys = npt.NDArray[np.uint64]
Moves = npt.NDArray[np.int64]


@numba.njit(nogil=True)
def _hammer(
    table: npt.NDArray[np.uint64], keys: Keys, moves: Moves, counts: Moves, seed: int,
    rounds: int, found: Moves,
) -> None:
    """Store a legal move of a random position, probe another one, ``rounds`` times; count
    the hits whose move is none of the probed position's (``found[1]``) and all hits
    (``found[0]``)."""
    state = np.uint64(seed) | np.uint64(1)
    n = keys.shape[0]
    for _ in range(rounds):
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        i = int(state % np.uint64(n))
        move = moves[i, int((state >> np.uint64(32)) % np.uint64(counts[i]))]
        depth = int((state >> np.uint64(20)) % np.uint64(30))
        tt.store(table, keys[i], move, depth * 7 - 100, depth, 1 + depth % 3, depth % 4)
        j = int((state >> np.uint64(40)) % np.uint64(n))
        entry = tt.probe(table, keys[j])
        if entry >= 0:
            found[0] += 1
            got = tt.entry_move(entry)
            ok = False
            for k in range(counts[j]):
                if moves[j, k] == got:
                    ok = True
            if not ok:
                found[1] += 1


def test_concurrent_writes_never_give_a_move_of_another_position() -> None:
    # positions with different moves; a table of two buckets, so the threads fight over the
    # same entries and a torn entry (one store's key word, another's data word) is common
    boards = random.Random(7).sample(random_boards(7, 10, False, 60), 64)
    positions = [Position.from_fen(board.fen()) for board in boards]
    positions = [p for p in positions if p.legal_moves()]
    keys = np.array([p.key for p in positions], dtype=np.uint64)
    moves = np.zeros((len(positions), MAX_MOVES), dtype=np.int64)
    counts = np.zeros(len(positions), dtype=np.int64)
    for row, position in enumerate(positions):
        legal = position.legal_moves()
        moves[row, : len(legal)] = legal
        counts[row] = len(legal)
    table = np.zeros(2 * tt.BUCKET_WORDS, dtype=np.uint64)
    results = [np.zeros(2, dtype=np.int64) for _ in range(4)]
    _hammer(table, keys, moves, counts, 1, 10, results[0])  # compiled before the race
    results[0].fill(0)
    start = threading.Barrier(4)

    def run(index: int) -> None:
        start.wait()
        _hammer(table, keys, moves, counts, 1000 + index, 5_000_000, results[index])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    hits = sum(int(found[0]) for found in results)
    wrong = sum(int(found[1]) for found in results)
    assert hits > 1_000_000  # the probes did find entries
    assert wrong == 0


def test_a_table_move_of_another_position_is_never_played() -> None:
    # the root's entry names a move of another position: the search only orders its own
    # generated moves by it, so every position still gets a legal move
    searcher = Searcher(1, threads=2)
    other = Position.from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1").legal_moves()
    for case in PERFT_SUITE[:40]:
        position = Position.from_fen(case.fen)
        legal = position.legal_moves()
        foreign = next((m for m in other if m not in legal), None)
        if foreign is None:
            continue
        tt.store(searcher.tt_table, np.uint64(position.key), foreign, 0, 60, tt.BOUND_EXACT,
                 searcher.generation + 1)
        result = searcher.think(position, GoLimits(depth=2), UNLIMITED, time.monotonic(),
                                lambda _: None)
        _assert_legal_result(chess.Board(case.fen), result)


# -- the UCI side: stop, go, ponderhit, ucinewgame and quit with helpers ------------------------


class _Sink(io.StringIO):
    """An output stream for an in-process engine that hands each line to the test (a
    StringIO only to be the TextIO the engine takes: its own buffer is never written)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: queue.Queue[str] = queue.Queue()
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        *done, self._partial = self._partial.split("\n")
        for line in done:
            self.lines.put(line)
        return len(text)

    def flush(self) -> None:
        pass

    def expect(self, prefix: str) -> list[str]:
        """Lines up to and including the first that starts with ``prefix``."""
        seen: list[str] = []
        while True:
            line = self.lines.get(timeout=WAIT_S)
            seen.append(line)
            if line.startswith(prefix):
                return seen


def _engine_with_4_threads(sink: _Sink) -> UciEngine:
    """An in-process engine searching with 4 threads, whatever the cores of this machine."""
    engine = UciEngine(sink)
    with pytest.MonkeyPatch.context() as patch:
        # Threads allows one per core; this machine may have fewer than 4
        patch.setattr("engine.uci.max_threads", lambda: 4)
        engine.handle("setoption name Threads value 4")
    engine.handle("isready")
    sink.expect("readyok")
    assert engine.searcher.threads == 4
    return engine


@pytest.fixture(scope="module")
def uci() -> Iterator[tuple[UciEngine, _Sink]]:
    sink = _Sink()
    engine = _engine_with_4_threads(sink)
    yield engine, sink
    engine.handle("quit")
    assert not _helpers_alive()


def _helpers_of(engine: UciEngine) -> list[threading.Thread]:
    return list(engine.searcher.pool.running)


def test_stop_and_go_in_a_tight_loop_leave_no_thread(uci: tuple[UciEngine, _Sink]) -> None:
    engine, sink = uci
    board = chess.Board()
    for round_number in range(25):
        engine.handle("position startpos")
        engine.handle("go infinite")
        sink.expect("info depth")  # the helpers start before the main thread's first iteration
        helpers = _helpers_of(engine)
        assert len(helpers) == 3 and all(h.is_alive() for h in helpers)
        if round_number % 2:
            engine.handle("stop")
            lines = sink.expect("bestmove")
        else:
            engine.handle("go depth 3")  # a go during a search: the old one answers first
            first = sink.expect("bestmove")
            assert chess.Move.from_uci(first[-1].split()[1]) in board.legal_moves
            lines = sink.expect("bestmove")
        assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
        # bestmove is sent after the helpers ended: none is left once it is read
        assert not _helpers_alive(), round_number
        assert not any(h.is_alive() for h in helpers)


def test_ponderhit_and_new_game_with_helpers(uci: tuple[UciEngine, _Sink]) -> None:
    engine, sink = uci
    engine.handle("position startpos moves e2e4 e7e5")
    engine.handle("go ponder wtime 1000 btime 1000")
    sink.expect("info depth")
    assert len(_helpers_of(engine)) == 3
    engine.handle("ponderhit")
    sink.expect("bestmove")  # the clock, started at ponderhit, ends the search
    assert not _helpers_alive()
    engine.handle("go infinite")
    sink.expect("info depth")
    engine.handle("ucinewgame")  # stops the search; its bestmove comes first
    sink.expect("bestmove")
    assert not _helpers_alive()


def test_quit_during_a_search_with_helpers_ends_them() -> None:
    sink = _Sink()
    engine = _engine_with_4_threads(sink)
    engine.handle("go infinite")
    sink.expect("info depth")
    assert len(_helpers_of(engine)) == 3
    assert engine.handle("quit") is False
    assert not _helpers_alive()


@pytest.mark.skipif(max_threads() < 2, reason="Threads allows one per core: 2 need 2 cores")
def test_uci_transcript_with_two_threads() -> None:
    process = UciProcess()
    try:
        lines = process.handshake()
        assert f"option name Threads type spin default 1 min 1 max {max_threads()}" in lines
        for bad in ("0", str(max_threads() + 1), "two"):
            process.send(f"setoption name Threads value {bad}")
            process.send("isready")
            got = process.expect("readyok")
            assert any(line.startswith("info string error setoption: Threads") for line in got)
        process.send("setoption name Threads value 2")
        moves = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4"]
        process.send(f"position startpos moves {' '.join(moves)}")
        process.send("go depth 8")
        lines = process.expect("bestmove")
        board = chess.Board()
        for text in moves:
            board.push_uci(text)
        infos = [line for line in lines if line.startswith("info depth")]
        depths = [int(line.split()[2]) for line in infos if "bound" not in line]
        assert depths == list(range(1, 9))
        nodes = [int(line.split()[line.split().index("nodes") + 1]) for line in infos]
        assert nodes == sorted(nodes)
        best = lines[-1].split()[1]
        assert chess.Move.from_uci(best) in board.legal_moves
        process.send("go infinite")
        process.expect("info depth 3")
        process.send("stop")
        lines = process.expect("bestmove")
        assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
    finally:
        assert process.close() == 0


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "bench", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=WAIT_S, check=False,
    )


def test_bench_runs_with_threads() -> None:
    done = _bench("2", "--threads", "2")
    assert done.returncode == 0, done.stderr
    assert "Threads         : 2" in done.stdout
    assert int(done.stdout.split("Nodes searched  :")[1].split()[0]) > 0
    bad = _bench("2", "--threads", "0")
    assert bad.returncode != 0
    assert "--threads needs a positive integer, got '0'" in bad.stderr
