"""UCI transcripts against a real engine subprocess."""

from __future__ import annotations

from collections.abc import Iterator

import chess
import pytest

from engine.timeman import GoLimits
from engine.uci import UciError, parse_go, parse_position
from tests.engine.uci_process import UciProcess


@pytest.fixture
def engine() -> Iterator[UciProcess]:
    process = UciProcess()
    process.handshake()
    yield process
    assert process.close() == 0


def _field(line: str, name: str) -> str:
    tokens = line.split()
    return tokens[tokens.index(name) + 1]


def _pv(line: str) -> list[str]:
    tokens = line.split()
    return tokens[tokens.index("pv") + 1 :] if "pv" in tokens else []


def _assert_legal_line(board: chess.Board, moves: list[str]) -> None:
    walker = board.copy()
    for text in moves:
        move = chess.Move.from_uci(text)
        assert move in walker.legal_moves, f"{text} illegal in {walker.fen()} (line {moves})"
        walker.push(move)


def test_handshake_lists_the_options() -> None:
    process = UciProcess()
    try:
        lines = process.handshake()
        assert lines[0].startswith("id name Kibitz")
        options = [line for line in lines if line.startswith("option name")]
        for name in ("Hash", "Clear Hash", "Move Overhead", "Ponder", "UCI_Chess960"):
            assert any(line.startswith(f"option name {name} type") for line in options), name
    finally:
        assert process.close() == 0


def test_search_reports_info_and_a_legal_bestmove_and_pv(engine: UciProcess) -> None:
    moves = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4"]
    engine.send(f"position startpos moves {' '.join(moves)}")
    engine.send("go depth 7")
    lines = engine.expect("bestmove")
    board = chess.Board()
    for text in moves:
        board.push_uci(text)
    infos = [line for line in lines if line.startswith("info depth")]
    assert [int(_field(line, "depth")) for line in infos if "bound" not in line] == list(
        range(1, 8)
    )
    for line in infos:
        for name in ("seldepth", "score", "nodes", "nps", "hashfull", "time"):
            assert name in line.split()
        _assert_legal_line(board, _pv(line))
    tokens = lines[-1].split()
    best = tokens[1]
    assert chess.Move.from_uci(best) in board.legal_moves
    assert best == _pv(infos[-1])[0]
    if "ponder" in tokens:
        _assert_legal_line(board, [best, tokens[3]])


def test_malformed_and_unknown_input_is_reported_and_ignored(engine: UciProcess) -> None:
    engine.send("position startpos moves e2e4")
    bad = [
        "xyzzy",
        "position",
        "position fen not/a/fen w - - 0 1",
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        "position startpos moves e7e5 e2e4 e1e8",
        "position startpos moves e2e5",
        "position somewhere",
        "setoption name Hash value lots",
        "setoption name Hash value 0",
        "setoption name Move Overhead value -5",
        "setoption name Ponder value maybe",
        "setoption name No Such Option value 1",
        "setoption Hash 16",
        "go perft 0",
    ]
    for line in bad:
        engine.send(line)
        engine.send("isready")
        got = engine.expect("readyok")
        errors = [text for text in got if text.startswith("info string error")]
        assert errors, f"no error reported for {line!r}"
    # an unknown word is reported and skipped; a limit with a bad value refuses the search
    engine.send("position startpos moves e2e4")
    engine.send("go depth 3 wibble 7")
    lines = engine.expect("bestmove")
    assert any("wibble" in line for line in lines if line.startswith("info string error"))
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
    engine.send("go depth 3 nodes abc")
    lines = engine.expect("bestmove")
    assert any("abc" in line for line in lines if line.startswith("info string error"))
    assert lines[-1] == "bestmove 0000"


def test_stop_ends_an_infinite_search(engine: UciProcess) -> None:
    engine.send("position startpos")
    engine.send("go infinite")
    engine.expect("info depth 4")  # well into the search
    engine.send("isready")
    lines = engine.expect("readyok")  # the reader is not blocked by the search
    assert not any(line.startswith("bestmove") for line in lines)
    engine.send("stop")
    # an infinite search only ends by the stop
    lines = engine.expect("bestmove")
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves


def test_infinite_search_waits_for_stop_even_when_it_is_done(engine: UciProcess) -> None:
    engine.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    engine.send("go infinite")
    with pytest.raises(TimeoutError):
        engine.expect("bestmove", timeout_s=1.5)
    engine.send("stop")
    assert engine.expect("bestmove")[-1].startswith("bestmove d1d8")


def test_ponder_then_ponderhit_plays_on_the_clock(engine: UciProcess) -> None:
    engine.send("setoption name Ponder value true")
    engine.send("position startpos moves e2e4 e7e5")
    engine.send("go ponder wtime 2000 btime 2000 winc 0 binc 0")
    with pytest.raises(TimeoutError):
        engine.expect("bestmove", timeout_s=1.0)
    engine.send("ponderhit")
    # pondering never ends by itself: the answer comes from the clock started at ponderhit
    engine.expect("bestmove", timeout_s=30.0)


def test_quit_during_a_search_exits_cleanly() -> None:
    process = UciProcess()
    process.handshake()
    process.send("go infinite")
    process.expect("info depth 2")  # the search is under way
    process.send("quit")
    assert process.proc.wait(timeout=10) == 0
    process.close()


def test_perft_prints_divide_lines(engine: UciProcess) -> None:
    engine.send("position startpos moves e2e4")
    engine.send("go perft 3")
    lines = engine.expect("Nodes searched")
    board = chess.Board()
    board.push_uci("e2e4")
    assert lines[-1] == "Nodes searched: 13160"
    assert lines[-2] == ""
    counts = dict(line.split(": ") for line in lines[:-2])
    assert set(counts) == {move.uci() for move in board.legal_moves}


def test_mate_score_and_go_mate(engine: UciProcess) -> None:
    engine.send("position fen r5rk/5p1p/5R2/4B3/8/8/7P/7K w - - 0 1")
    engine.send("go mate 3")
    lines = engine.expect("bestmove")
    final = [line for line in lines if line.startswith("info depth") and "bound" not in line][-1]
    assert " score mate 3 " in final
    assert lines[-1].split()[1] == "f6a6"


def test_searchmoves_restricts_the_root(engine: UciProcess) -> None:
    engine.send("position startpos")
    engine.send("go depth 5 searchmoves a2a3 h2h3")
    best = engine.expect("bestmove")[-1].split()[1]
    assert best in ("a2a3", "h2h3")


def test_node_limit(engine: UciProcess) -> None:
    engine.send("position startpos")
    engine.send("go nodes 20000")
    lines = engine.expect("bestmove")
    nodes = [int(_field(line, "nodes")) for line in lines if line.startswith("info depth")]
    assert nodes and max(nodes) <= 20000 + 1024


def test_no_legal_move_answers_null_move(engine: UciProcess) -> None:
    engine.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    engine.send("go depth 3")
    assert engine.expect("bestmove")[-1] == "bestmove 0000"


def test_chess960_castling_is_written_king_takes_rook(engine: UciProcess) -> None:
    engine.send("setoption name UCI_Chess960 value true")
    engine.send("ucinewgame")
    fen = "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1"
    engine.send(f"position fen {fen} moves e1c1")  # the standard spelling is accepted too
    engine.send("go depth 2 searchmoves b8a8")
    assert engine.expect("bestmove")[-1].split()[1] == "b8a8"
    engine.send(f"position fen {fen}")
    engine.send("go depth 1 searchmoves e1b1")
    assert engine.expect("bestmove")[-1].split()[1] == "e1b1"


def test_clear_hash_and_new_game_and_resize(engine: UciProcess) -> None:
    for line in (
        "setoption name Hash value 4",
        "setoption name Clear Hash",
        "ucinewgame",
        "setoption name Move Overhead value 100",
        "position startpos",
    ):
        engine.send(line)
    engine.send("isready")
    got = engine.expect("readyok")
    assert not [line for line in got if line.startswith("info string error")]
    engine.send("go movetime 300")
    assert engine.expect("bestmove", timeout_s=5.0)[-1].startswith("bestmove ")


def test_parse_go_collects_every_limit() -> None:
    errors: list[str] = []
    limits, perft = parse_go(
        [
            "wtime", "1000", "btime", "2000", "winc", "10", "binc", "20", "movestogo", "5",
            "movetime", "300", "depth", "4", "nodes", "99", "mate", "3", "infinite", "ponder",
            "searchmoves", "e2e4", "d2d4",
        ],
        errors.append,
    )
    assert limits == GoLimits(1000, 2000, 10, 20, 5, 300, 4, 99, 3, True, True, ("e2e4", "d2d4"))
    assert perft is None and not errors
    limits, perft = parse_go(["perft", "4"], errors.append)
    assert perft == 4


def test_parse_position_rejects_illegal_moves_with_the_reason() -> None:
    with pytest.raises(UciError, match=r"move 2 \('e2e4'\) is not legal"):
        parse_position(["startpos", "moves", "e2e4", "e2e4"], False)
    with pytest.raises(UciError, match="bad FEN"):
        parse_position(["fen", "8/8/8", "w", "-", "-", "0", "1"], False)
    position = parse_position(["startpos"], False)
    assert position.fen() == chess.STARTING_FEN
