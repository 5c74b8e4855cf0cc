"""The search line as it is made from python-chess's InfoDict, and its score's compact form."""

from __future__ import annotations

import dataclasses

import chess
import chess.engine
import pytest

from bot.engines.searchline import SearchLine, pv_san, score_text

E4_E5 = (chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5"))


def test_every_field_of_a_full_info_lands_typed_with_its_unit() -> None:
    score = chess.engine.PovScore(chess.engine.Cp(-42), chess.BLACK)
    pv = list(E4_E5)
    info: chess.engine.InfoDict = {"depth": 14, "seldepth": 21, "score": score,
                                   "nodes": 123_456, "nps": 987_000, "time": 0.125,
                                   "pv": pv, "hashfull": 17, "multipv": 1}
    line = SearchLine.from_info(info)
    assert line == SearchLine(depth=14, seldepth=21, score=score, nodes=123_456,
                              nodes_per_s=987_000, time_s=0.125, pv=E4_E5)
    assert line.speed_nps == 987_000
    pv.append(chess.Move.from_uci("g1f3"))  # the engine's list is not shared
    assert line.pv == E4_E5
    with pytest.raises(dataclasses.FrozenInstanceError):
        line.depth = 15  # type: ignore[misc]  # on purpose: the line is frozen


def test_missing_fields_stay_unknown() -> None:
    empty = SearchLine.from_info({})
    assert empty == SearchLine()
    assert empty.score is None and empty.pv == () and empty.speed_nps is None
    depth_only = SearchLine.from_info({"depth": 3})
    assert depth_only.depth == 3 and depth_only.seldepth is None
    assert depth_only.nodes is None and depth_only.time_s is None


def test_an_empty_pv_is_no_pv() -> None:
    line = SearchLine.from_info({"depth": 2, "pv": []})
    assert line.pv == () and pv_san(chess.Board(), line.pv) == []


def test_the_speed_is_worked_out_when_not_reported() -> None:
    assert SearchLine.from_info({"nodes": 50_000, "time": 0.5}).speed_nps == 100_000
    assert SearchLine.from_info({"nodes": 50_000, "time": 0.0}).speed_nps is None  # no time
    assert SearchLine.from_info({"nodes": 50_000, "time": 0.5, "nps": 7}).speed_nps == 7


@pytest.mark.parametrize(("mate", "white_text", "black_side"), [
    (3, "mate in 3 for White", "#-3"),
    (-2, "mate in 2 for Black", "#2"),
    (0, "mate on the board", "#0"),
])
def test_mate_scores_keep_their_side(mate: int, white_text: str, black_side: str) -> None:
    line = SearchLine.from_info(
        {"score": chess.engine.PovScore(chess.engine.Mate(mate), chess.WHITE)})
    assert line.score is not None
    assert score_text(line.score) == white_text
    assert score_text(line.score, chess.BLACK) == black_side


@pytest.mark.parametrize("bound", ["lowerbound", "upperbound"])
def test_a_bound_score_is_kept_as_the_score(bound: str) -> None:
    score = chess.engine.PovScore(chess.engine.Cp(55), chess.WHITE)
    info: chess.engine.InfoDict = {"depth": 8, "score": score, "pv": list(E4_E5)}
    exact = SearchLine.from_info(info)
    # python-chess sets the bound flags at runtime (_parse_uci_info); InfoDict omits them
    flagged = SearchLine.from_info(
        {**info, bound: True})  # type: ignore[misc]  # a key InfoDict does not declare
    assert flagged == exact and flagged.score == score
