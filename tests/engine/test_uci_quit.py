"""``quit`` ends the engine at once, whatever the table's size and whatever is queued before
it: a clear of the table that a later clear or ``quit`` makes pointless is not done.

The bounds are counted in clears of the same table measured on the same machine in the same
test, not in seconds: a slow or busy machine makes both sides slower alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import pytest

from tests.engine.uci_process import UciProcess

HASH_MB = 1024  # large enough that a clear takes far longer than starting or ending a process
NEW_GAMES = 8  # ucinewgame commands sent in a row
BOUND_CLEARS = NEW_GAMES / 2  # what they may cost, in clears: doing every one costs NEW_GAMES
SAMPLES = 3  # single clears timed, for their median
GUARD_S = 600.0  # only against a hang: the bound is checked on the time taken


@pytest.fixture
def engine() -> Iterator[UciProcess]:
    process = UciProcess()
    process.handshake()
    process.send(f"setoption name Hash value {HASH_MB}")
    process.send("isready")
    process.expect("readyok")
    yield process
    process.close()


def write_to_table(engine: UciProcess) -> None:
    """A short search: the table holds entries again, so the next clear has work to do."""
    engine.send("position startpos")
    engine.send("go depth 6")
    engine.expect("bestmove")


def single_clear_s(engine: UciProcess) -> float:
    """The median time of one ``ucinewgame`` of a written table, ``isready`` answered."""
    samples = []
    for _ in range(SAMPLES):
        write_to_table(engine)
        start_s = time.monotonic()
        engine.send("ucinewgame")
        engine.send("isready")
        engine.expect("readyok")
        samples.append(time.monotonic() - start_s)
    return statistics.median(samples)


def send_at_once(engine: UciProcess, lines: list[str]) -> None:
    assert engine.proc.stdin is not None
    engine.proc.stdin.write("".join(f"{line}\n" for line in lines))
    engine.proc.stdin.flush()


def test_clears_in_a_row_cost_one(engine: UciProcess) -> None:
    one_s = single_clear_s(engine)
    write_to_table(engine)
    start_s = time.monotonic()
    send_at_once(engine, ["ucinewgame"] * NEW_GAMES + ["isready"])
    engine.expect("readyok")
    elapsed_s = time.monotonic() - start_s
    assert elapsed_s < BOUND_CLEARS * one_s, (
        f"{NEW_GAMES} ucinewgame took {elapsed_s:.3f} s; one takes {one_s:.3f} s")


def test_quit_ends_the_process_without_the_queued_clears(engine: UciProcess) -> None:
    one_s = single_clear_s(engine)
    write_to_table(engine)
    start_s = time.monotonic()
    queued = ["ucinewgame", "setoption name Clear Hash"] * (NEW_GAMES // 2)
    send_at_once(engine, [*queued, f"setoption name Hash value {HASH_MB}", "quit"])
    code = engine.proc.wait(timeout=GUARD_S)
    elapsed_s = time.monotonic() - start_s
    assert code == 0
    assert elapsed_s < BOUND_CLEARS * one_s, (
        f"quit after {NEW_GAMES} clears and a new table took {elapsed_s:.3f} s; one clear takes "
        f"{one_s:.3f} s")
