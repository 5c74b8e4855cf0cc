"""Who claimed a game's advantage first, from a match's PGN (``tools.match.claims``)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import chess
import chess.pgn
import pytest

from tools.match.claims import GameClaims, main, parse_score_cp, read_claims, report

MOVES = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Bxc6", "dxc6", "O-O", "f6"]


def game(white: str, black: str, result: str, comments: list[str]) -> str:
    """A game as ``tools.match`` writes it: one score comment a move."""
    record = chess.pgn.Game()
    record.headers.update(White=white, Black=black, Result=result)
    node: chess.pgn.GameNode = record
    board = chess.Board()
    for san, comment in zip(MOVES, comments, strict=False):
        move = board.parse_san(san)
        board.push(move)
        node = node.add_variation(move, comment=comment)
    return str(record) + "\n\n"


def claims_of(pgn: str, engine: str | None = None, cp: float = 100.0
              ) -> tuple[str, list[GameClaims]]:
    return read_claims(io.StringIO(pgn), engine, cp)


def test_scores_are_read_as_the_movers_centipawns_and_a_mate_is_infinite() -> None:
    assert parse_score_cp("+0.31/15 0.523s") == 31.0
    assert parse_score_cp("-1.20/9 0.100s") == -120.0
    assert parse_score_cp("+M4/22 1.002s") == math.inf
    assert parse_score_cp("-M3/12 0.2s") == -math.inf
    assert parse_score_cp("?/? 0.010s") is None
    assert parse_score_cp("book") is None


def test_the_first_claim_of_each_side_is_found_with_its_move_pieces_and_the_other_view() -> None:
    # white (the engine) never reaches +1.00; black claims +1.20 on its third move (ply 5)
    pgn = game("kibitz", "ethereal", "0-1",
               ["+0.20/10 0.1s", "+0.10/9 0.1s", "+0.40/10 0.1s", "+0.60/9 0.1s",
                "-0.15/10 0.1s", "+1.20/9 0.1s", "-0.90/10 0.1s", "+1.50/9 0.1s"])
    engine, games = claims_of(pgn)
    assert engine == "kibitz"
    [claims] = games
    assert claims.points == 0.0 and claims.engine_first is None and claims.first == "opponent"
    claim = claims.opponent_first
    assert claim is not None
    assert (claim.cp, claim.ply, claim.fullmove, claim.pieces) == (120.0, 5, 3, 32)
    assert claim.other_cp == -15.0  # the engine's score of its move just before
    assert claim.fen == "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"


def test_a_claim_below_the_threshold_is_none_and_a_mate_always_is_one() -> None:
    pgn = game("kibitz", "ethereal", "1-0", ["+0.99/10 0.1s", "+0.50/9 0.1s", "+M5/12 0.1s"])
    [claims] = claims_of(pgn)[1]
    assert claims.opponent_first is None
    assert claims.engine_first is not None and claims.engine_first.ply == 2
    assert claims.first == "engine"
    [lower] = claims_of(pgn, cp=90.0)[1]
    assert lower.engine_first is not None and lower.engine_first.ply == 0


def test_the_engine_named_plays_either_colour_and_other_pairings_are_left_out() -> None:
    pgn = (game("kibitz", "ethereal", "1-0", ["+1.10/10 0.1s"])
           + game("ethereal", "kibitz", "1-0", ["+0.20/10 0.1s", "+1.30/9 0.1s"])
           + game("gnuchess", "ethereal", "0-1", ["+2.00/10 0.1s"])
           + game("ethereal", "kibitz", "*", ["+0.20/10 0.1s"]))
    games = claims_of(pgn, engine="kibitz")[1]
    assert [g.points for g in games] == [1.0, 0.0]  # black's loss is the engine's 0
    assert [g.first for g in games] == ["engine", "engine"]
    assert games[1].engine_first is not None and games[1].engine_first.other_cp == 20.0


def test_the_report_sets_the_claims_beside_the_results() -> None:
    pgn = (game("kibitz", "ethereal", "1-0", ["+1.10/10 0.1s", "-0.80/9 0.1s"])
           + game("ethereal", "kibitz", "1-0", ["+1.30/10 0.1s"])
           + game("kibitz", "ethereal", "1/2-1/2", ["+0.30/10 0.1s", "+1.00/9 0.1s"])
           + game("ethereal", "kibitz", "1/2-1/2", ["+0.10/10 0.1s", "+0.00/9 0.1s"]))
    engine, games = claims_of(pgn)
    lines = report(engine, games, 100.0, "ethereal")
    assert lines[0] == "kibitz: 2/4, 50.0%"
    assert lines[2].split() == ["kibitz", "1", "games", "+1", "=0", "-0", "100.0%"]
    assert lines[3].split() == ["ethereal", "2", "games", "+0", "=1", "-1", "25.0%"]
    assert lines[4].split() == ["neither", "1", "games", "+0", "=1", "-0", "50.0%"]
    # the two opponent claims: ply 0 of game 2 (no engine score before it), ply 1 of game 3
    assert "move 1, 32 pieces (medians)" in lines[5]
    assert "kibitz's own score one ply before: median +0.30" in lines[5]
    assert lines[6].split() == ["pieces", "at", "the", "claim", "25-32:", "2", "17-24:", "0",
                                "9-16:", "0", "2-8:", "0"]
    assert lines[7].split()[-6:] == ["level:", "2", "ahead:", "0", "behind:", "0"]


def test_a_claim_s_material_is_the_claiming_side_s_count_in_pawns() -> None:
    # black claims just after Bxc6, a knight down until it takes back
    pgn = game("kibitz", "ethereal", "1/2-1/2",
               ["+0.20/10 0.1s", "+0.10/9 0.1s", "+0.40/10 0.1s", "+0.60/9 0.1s",
                "+0.30/10 0.1s", "+0.20/9 0.1s", "+0.50/10 0.1s", "+1.10/9 0.1s"])
    [claims] = claims_of(pgn)[1]
    claim = claims.opponent_first
    assert claim is not None and claim.ply == 7 and claim.material == -3
    lines = report("kibitz", [claims], 100.0, "ethereal")
    assert lines[-1].split()[-6:] == ["level:", "0", "ahead:", "0", "behind:", "1"]


def test_main_writes_the_positions_the_opponent_claimed_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pgn = tmp_path / "match.pgn"
    pgn.write_text(game("kibitz", "ethereal", "0-1", ["+0.05/10 0.1s", "+1.25/9 0.1s"])
                   + game("ethereal", "kibitz", "1-0", ["+0.10/10 0.1s", "+1.40/9 0.1s"]))
    epd = tmp_path / "claims.epd"
    assert main([str(pgn), "--epd", str(epd)]) == 0
    out = capsys.readouterr().out
    assert "1 positions written" in out
    [line] = epd.read_text().splitlines()
    board, ops = chess.Board.from_epd(line)
    assert board.fen() == chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
                                      ).fen()
    assert ops == {"c0": "ethereal +1.25", "c1": "kibitz +0.05 one ply before"}


def test_main_names_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "absent.pgn")]) == 2
    assert "absent.pgn" in capsys.readouterr().err
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    assert main([str(empty)]) == 2
    assert "no game in the PGN" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(empty), "--cp", "0"])
    assert "--cp must be above 0, got 0" in capsys.readouterr().err
