"""Kibitz lines and the outgoing sanitizer."""

from __future__ import annotations

import chess
import chess.engine
from hypothesis import given
from hypothesis import strategies as st

from bot.engines.searchline import SearchLine, pv_san, score_text
from bot.game.chat import (
    MAX_CHAT_CHARS,
    format_count,
    kibitz_line,
    lila_would_lower,
    sanitize,
)


def white(cp: int | None = None, mate: int | None = None) -> chess.engine.PovScore:
    score: chess.engine.Score = chess.engine.Cp(cp) if cp is not None else chess.engine.Mate(
        mate or 0)
    return chess.engine.PovScore(score, chess.WHITE)


def test_scores_read_from_whites_side() -> None:
    assert score_text(white(35)) == "+0.35"
    assert score_text(chess.engine.PovScore(chess.engine.Cp(120), chess.BLACK)) == "-1.20"
    assert score_text(white(mate=3)) == "mate in 3 for White"
    assert score_text(white(mate=-2)) == "mate in 2 for Black"


def test_counts_are_short() -> None:
    assert format_count(950) == "950"
    assert format_count(1500) == "1.5k"
    assert format_count(45210) == "45k"
    assert format_count(2_345_678) == "2.3M"


def test_pv_in_san_with_move_numbers_from_black() -> None:
    board = chess.Board()
    board.push_san("e4")
    pv = [chess.Move.from_uci(u) for u in ("e7e5", "g1f3", "b8c6")]
    assert pv_san(board, pv) == ["1...e5", "2. Nf3", "Nc6"]


def test_pv_stops_at_an_illegal_move() -> None:
    pv = [chess.Move.from_uci(u) for u in ("e2e4", "e2e4", "g1f3")]
    assert pv_san(chess.Board(), pv) == ["1. e4"]


def long_pv(board: chess.Board, plies: int) -> tuple[chess.Move, ...]:
    line, position = [], board.copy()
    for _ in range(plies):
        move = sorted(position.legal_moves, key=lambda m: m.uci())[0]
        line.append(move)
        position.push(move)
    return tuple(line)


def test_kibitz_line_has_depth_score_speed_and_pv() -> None:
    board = chess.Board()
    searched = SearchLine(depth=12, seldepth=18, score=white(-40), nodes_per_s=1_234_000,
                          pv=long_pv(board, 4))
    line = kibitz_line(board, searched)
    assert line.startswith("depth 12/18 | eval -0.40 | 1.2M nps | PV 1. ")
    assert len(line) <= MAX_CHAT_CHARS


def test_a_kibitz_line_reads_the_same_from_the_engine_s_info() -> None:
    """Built from python-chess's InfoDict: a mate for Black, a bound score, no PV at all."""
    mated: chess.engine.InfoDict = {"depth": 5, "seldepth": 7,
                                    "score": chess.engine.PovScore(chess.engine.Mate(-1),
                                                                   chess.WHITE),
                                    "nodes": 900, "time": 0.01, "pv": []}
    assert kibitz_line(chess.Board(), SearchLine.from_info(mated)) == \
        "depth 5/7 | eval mate in 1 for Black | 90k nps"
    pv = [chess.Move.from_uci(u) for u in ("a2a3", "a7a6")]
    # python-chess sets these bound flags at runtime (_parse_uci_info) but its InfoDict does
    # not declare them, so the keys it really sends cannot be typed.
    lower: chess.engine.InfoDict = {
        "depth": 9, "score": white(31), "pv": pv,
        "lowerbound": True}  # type: ignore[typeddict-unknown-key]  # python-chess sends it
    upper: chess.engine.InfoDict = {
        "depth": 9, "score": white(31), "pv": pv,
        "upperbound": True}  # type: ignore[typeddict-unknown-key]  # python-chess sends it
    for bound in (lower, upper):
        assert kibitz_line(chess.Board(), SearchLine.from_info(bound)) == \
            "depth 9 | eval +0.31 | PV 1. a3 a6"
    assert kibitz_line(chess.Board(), SearchLine.from_info({})) == ""


def test_a_long_pv_is_cut_between_moves() -> None:
    board = chess.Board()
    pv = long_pv(board, 80)
    line = kibitz_line(board, SearchLine(depth=30, score=white(mate=12), pv=pv))
    assert len(line) <= MAX_CHAT_CHARS
    tokens = pv_san(board, pv)
    shown = line.split(" | PV ", 1)[1]
    # What is shown is a whole prefix of the PV's tokens: no move was broken.
    assert any(shown == " ".join(tokens[:n]) for n in range(1, len(tokens)))


def test_nps_from_nodes_and_time_when_missing() -> None:
    line = kibitz_line(chess.Board(), SearchLine(nodes=50_000, time_s=0.5))
    assert line == "100k nps"


def test_sanitize_removes_links_and_control_characters() -> None:
    assert sanitize("see https://evil.example/x now") == "see now"
    assert sanitize("visit www.spam.io or lichess.org today") == "visit or today"
    assert sanitize("a\nb\tc\x00d\u202ee") == "a b c d e"
    assert sanitize("   ") == ""


def test_sanitize_cuts_long_lines_at_a_word() -> None:
    text = "word " * 60
    out = sanitize(text)
    assert len(out) <= MAX_CHAT_CHARS and out.endswith("word")


@given(st.text(max_size=400))
def test_sanitize_always_gives_a_sendable_line(text: str) -> None:
    out = sanitize(text)
    assert len(out) <= MAX_CHAT_CHARS
    assert "\n" not in out and "://" not in out
    assert out == out.strip()


def test_a_bare_pv_of_piece_moves_is_not_lowered_by_lila() -> None:
    """lila lowers lines with more capitals than small letters up front; SAN never has more,
    the upper-case marker tips it: written small then, and only then."""
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    moves = tuple(chess.Move.from_uci(u) for u in ("a1b1", "a8b8", "b1c1", "b8c8"))
    line = kibitz_line(board, SearchLine(pv=moves))
    assert line == "pv 1. Rb1 Rb8 2. Rc1 Rc8" and not lila_would_lower(line)
    assert lila_would_lower("PV 1. Rb1 Rb8 2. Rc1 Rc8")
    pawns = tuple(chess.Move.from_uci(u) for u in ("a2a3", "a7a6"))
    assert kibitz_line(chess.Board(), SearchLine(pv=pawns)) == "PV 1. a3 a6"
    assert not lila_would_lower("depth 9 | eval +0.31 | 1.2M nps | PV 1. Rb1 Rb8 2. Rc1 Rc8")
    assert not lila_would_lower("1. O-O O-O-O 2. a3")  # castling words do not count
