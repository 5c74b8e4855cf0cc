"""The UCI engine never crashes, never hangs, never plays a stale move, never loses a command.

Transcripts against a real engine process, plus one in-process test whose warm-up is held
back on purpose (a cold start on a short clock).  Nothing here measures time: a test waits for
the answer it expects, with a generous timeout for a busy machine.
"""

from __future__ import annotations

import io
import threading

import chess
import pytest

from engine import uci
from engine.uci import UciEngine, parse_position
from tests.engine.uci_process import UciProcess

QUEENS_FEN = "QQQQQQrk/Q4Qrr/Q5QQ/Q6Q/Q6Q/Q6Q/Q6Q/KQQQQQQQ w - - 0 1"


def _ready(engine: UciProcess) -> list[str]:
    """Everything the engine says up to the ``readyok`` of a fresh ``isready``."""
    engine.send("isready")
    return engine.expect("readyok")


def _errors(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("info string error")]


def _best(lines: list[str]) -> str:
    return lines[-1].split()[1]


# -- defect 1 -------------------------------------------------------------------------------------


def test_an_impossible_position_is_refused_and_the_engine_lives_on(engine: UciProcess) -> None:
    engine.send(f"position fen {QUEENS_FEN}")
    assert any("27 pieces" in line for line in _errors(_ready(engine)))
    engine.send("go depth 2")
    assert engine.expect("bestmove")[-1] == "bestmove 0000"
    engine.send("go perft 1")
    assert _errors(_ready(engine))
    engine.send("position startpos")
    engine.send("go depth 2")
    assert chess.Move.from_uci(_best(engine.expect("bestmove"))) in chess.Board().legal_moves


# -- defect 3 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rejected",
    ["position startpos moves e2e4 e2e4", "position fen rnbqkbnr/8/8 w - - 0 1", "position"],
)
def test_go_after_a_rejected_position_answers_no_move(engine: UciProcess, rejected: str) -> None:
    engine.send("position startpos moves e2e4")
    engine.send(rejected)
    assert _errors(_ready(engine))
    engine.send("go depth 2")
    lines = engine.expect("bestmove")
    assert lines[-1] == "bestmove 0000"
    assert any("no position" in line for line in _errors(lines))


# -- defect 4 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "go",
    [
        "go movetime -5",
        "go depth abc",
        "go mate 0",
        "go nodes",
        "go winc 100 binc 100",
        "go btime 1000 binc 10",  # white to move: black's clock alone is no limit
        "go",
        "go searchmoves e2e4",
    ],
)
def test_a_go_without_a_usable_limit_is_refused(engine: UciProcess, go: str) -> None:
    engine.send("position startpos")
    engine.send(go)
    lines = engine.expect("bestmove", timeout_s=20.0)
    assert lines[-1] == "bestmove 0000"
    assert _errors(lines)
    assert not [line for line in lines if line.startswith("info depth")]


# -- defect 5 -------------------------------------------------------------------------------------


def test_perft_answers_isready_and_obeys_stop_and_quit() -> None:
    process = UciProcess()
    try:
        process.handshake()
        process.send("go perft 8")  # hours of counting
        process.send("isready")
        process.expect("readyok")
        process.send("stop")
        assert "info string perft stopped" in process.expect("info string perft")
        assert not [line for line in _ready(process) if line.startswith("Nodes searched")]
        process.send("go perft 8")
        process.send("quit")
        assert process.proc.wait(timeout=60) == 0
    finally:
        process.close()


def test_piped_perfts_are_each_answered_and_a_go_waits_for_a_perft(engine: UciProcess) -> None:
    engine.send("position startpos")
    for _ in range(20):
        engine.send("go perft 1")
    engine.send("go perft 3")
    engine.send("go depth 1")
    lines = engine.expect("bestmove")
    counts = [line for line in lines if line.startswith("Nodes searched")]
    assert counts == ["Nodes searched: 20"] * 20 + ["Nodes searched: 8902"]
    assert not [line for line in lines if "perft stopped" in line]
    assert chess.Move.from_uci(_best(lines)) in chess.Board().legal_moves


# -- defect 6 -------------------------------------------------------------------------------------


def test_a_command_sent_on_the_final_line_is_never_refused(engine: UciProcess) -> None:
    for _ in range(300):
        engine.send("position startpos")
        engine.send("go perft 1")
        engine.expect("Nodes searched")
        engine.send("position startpos moves e2e4")
        engine.send("go depth 1")
        lines = engine.expect("bestmove")
        assert not _errors(lines)
        assert chess.Move.from_uci(_best(lines)) in chess.Board(
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
        ).legal_moves


def test_position_during_a_search_is_for_the_next_go(engine: UciProcess) -> None:
    engine.send("position startpos")
    engine.send("go infinite")
    engine.send("position startpos moves e2e4")
    assert not _errors(_ready(engine))
    engine.send("stop")
    assert chess.Move.from_uci(_best(engine.expect("bestmove"))) in chess.Board().legal_moves
    engine.send("go depth 2")
    after_e4 = chess.Board()
    after_e4.push_uci("e2e4")
    assert chess.Move.from_uci(_best(engine.expect("bestmove"))) in after_e4.legal_moves


def test_go_during_a_search_gets_its_own_answer(engine: UciProcess) -> None:
    engine.send("position startpos")
    engine.send("go infinite")
    engine.send("go depth 1")
    first = engine.expect("bestmove")
    second = engine.expect("bestmove")
    assert not _errors(first + second)
    for lines in (first, second):
        assert chess.Move.from_uci(_best(lines)) in chess.Board().legal_moves
    assert not [line for line in _ready(engine) if line.startswith("bestmove")]


# -- defect 7 -------------------------------------------------------------------------------------


def test_a_cold_start_on_a_short_clock_still_plays_a_legal_move(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The warm-up is held until the test ends: the clock, counted from the moment ``go`` is
    # read, must run out and bring a legal move without the compiled search.
    held = threading.Event()

    def held_warm_up(net: object = None) -> None:
        held.wait()

    monkeypatch.setattr(uci, "warm_up", held_warm_up)
    out = io.StringIO()
    answered = threading.Event()

    class Lines(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith("bestmove"):
                answered.set()
            return out.write(text)

    session = UciEngine(Lines())
    reader = threading.Thread(
        target=lambda: [session.handle(line) for line in ("uci", "go wtime 300 btime 300")],
        daemon=True,
    )
    reader.start()
    try:
        assert answered.wait(timeout=30.0), out.getvalue()
        best = out.getvalue().split("bestmove ")[1].split()[0]
        assert chess.Move.from_uci(best) in chess.Board().legal_moves
    finally:
        held.set()
        reader.join(timeout=30.0)
        session.handle("quit")


# -- defect 9 -------------------------------------------------------------------------------------


def test_switching_chess960_off_restores_standard_castling(engine: UciProcess) -> None:
    engine.send("setoption name UCI_Chess960 value true")
    engine.send("position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    engine.send("setoption name UCI_Chess960 value false")
    engine.send("go depth 1 searchmoves e1g1")
    assert _best(engine.expect("bestmove")) == "e1g1"


def test_an_upper_case_promotion_is_read() -> None:
    position = parse_position(["fen", "8/4P3/8/8/8/8/k7/7K", "w", "-", "-", "0", "1", "moves",
                               "e7e8Q"], False)
    assert position.fen().startswith("4Q3/")
