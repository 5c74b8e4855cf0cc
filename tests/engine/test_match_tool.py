"""The match tool's arithmetic, SPRT and adjudication (whole games: test_time_losses)."""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import chess.variant
import pytest

from tools.common import referee
from tools.common.engines import (
    EngineSpec,
    bench_signature,
    export_revision,
    parse_bench,
    resolve_engine,
)
from tools.common.openings import Opening, load_openings
from tools.common.referee import (
    GameResult,
    MatchConfig,
    Seat,
    _adjudicate,
    elo_difference_unpaired,
    elo_estimate,
    move_comment,
    parse_option,
    parse_time_control,
    parse_variant,
    play_game,
    run_match,
)
from tools.common.signals import sigterm_as_interrupt
from tools.common.sprt import SprtSpec, llr, pair_index
from tools.match.match import main, report, sprt_report

CONFIG = MatchConfig(10, 0.1, win_cp=1000, win_plies=4, draw_cp=10, draw_plies=4,
                     draw_min_ply=20, max_plies=400)


def test_elo_estimate_and_margin() -> None:
    elo, low, high = elo_estimate(10, 0, 10)
    assert elo == pytest.approx(0.0)
    assert low < 0 < high
    elo, low, high = elo_estimate(15, 0, 5)
    assert elo == pytest.approx(190.8, abs=0.5)
    assert low < elo < high
    assert elo_estimate(30, 20, 10)[0] > elo_estimate(25, 20, 15)[0]
    with pytest.raises(ValueError, match="no games"):
        elo_estimate(0, 0, 0)


def test_the_elo_difference_of_two_unpaired_samples() -> None:
    """60% against 40% of the same opponent: 140.8 Elo apart, read about their mean score; the
    interval holds both the sampling of A and of B, so it is wider than either's alone."""
    diff, low, high = elo_difference_unpaired((60, 0, 40), (40, 0, 60))
    assert diff == pytest.approx(140.8, abs=0.1)
    _, a_low, a_high = elo_estimate(60, 0, 40)
    assert low < diff < high and high - low > a_high - a_low
    diff, low, high = elo_difference_unpaired((30, 40, 30), (300, 400, 300))
    assert diff == pytest.approx(0.0) and low < 0 < high
    # more games narrow it
    narrow = elo_difference_unpaired((300, 400, 300), (300, 400, 300))
    assert narrow[2] - narrow[1] < high - low
    with pytest.raises(ValueError, match="no games"):
        elo_difference_unpaired((0, 0, 0), (1, 0, 0))


def test_time_control_and_option_parsing() -> None:
    assert parse_time_control("10+0.1") == (10.0, 0.1)
    assert parse_time_control("60") == (60.0, 0.0)
    for bad in ("ten", "10+x", "0+1", "5+-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_time_control(bad)
    assert parse_option("UCI_Elo=2000") == ("UCI_Elo", "2000")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_option("UCI_Elo")


def test_adjudication() -> None:
    board = chess.Board()
    assert _adjudicate(board, [1200, 1100, 1500, 1300], CONFIG) == "1-0"
    assert _adjudicate(board, [-1200, -1100, None, -1300], CONFIG) is None
    assert _adjudicate(board, [-1200, -1100, -1500, -1300], CONFIG) == "0-1"
    assert _adjudicate(board, [0, 5, -3, 0], CONFIG) is None  # too early for a draw
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"] * 5:
        board.push_uci(move)
    assert _adjudicate(board, [0, 5, -3, 0], CONFIG) == "1/2-1/2"


def test_built_in_openings_are_legal_and_distinct() -> None:
    openings = load_openings(None)
    assert len(openings) >= 30
    ends = set()
    for opening in openings:
        board = chess.Board(opening.fen)
        for move in opening.moves:
            assert move in board.legal_moves
            board.push(move)
        ends.add(board.fen())
    assert len(ends) == len(openings)


# Reference LLRs from fishtest's server/fishtest/stats/LLRcalc.py (official-stockfish/fishtest,
# commit b8eecff2), run with scipy: LLR_normalized(elo0, elo1, results) and
# LLR_logistic(elo0, elo1, results).  OpenBench's PentanomialSPRT (OpenBench/stats.py) is the
# same computation as LLR_normalized; its own example, (39, 8843, 26675, 9240, 44) with
# [0.5, 2.5], is the first row.
FISHTEST_LLR = (
    # (pentanomial, elo0, elo1, normalized, logistic)
    ((39, 8843, 26675, 9240, 44), 0.5, 2.5, 2.9416752080, 0.5555170687),
    ((10, 20, 30, 25, 15), 0, 5, 0.2328032316, 0.2694125272),
    ((0, 3, 10, 5, 0), -3, 1, 0.0499997058, 0.1086445353),
    ((5, 30, 60, 40, 8), 0, 10, 0.5864261173, 0.8039931210),
    ((12, 40, 50, 30, 9), 0, 5, -0.3397955061, -0.4709818092),
)


@pytest.mark.parametrize(("pairs", "elo0", "elo1", "normalized", "logistic"), FISHTEST_LLR)
def test_llr_matches_fishtest(pairs: tuple[int, ...], elo0: float, elo1: float,
                              normalized: float, logistic: float) -> None:
    assert llr(pairs, elo0, elo1, "normalized") == pytest.approx(normalized, abs=1e-7)
    assert llr(pairs, elo0, elo1, "logistic") == pytest.approx(logistic, abs=1e-7)


def test_llr_direction_and_bad_input() -> None:
    assert llr([0, 5, 20, 40, 30], 0, 5) > 0  # engine1 far ahead: evidence for H1
    assert llr([30, 40, 20, 5, 0], 0, 5) < 0
    with pytest.raises(ValueError, match="five numbers"):
        llr([1, 2, 3], 0, 5)
    with pytest.raises(ValueError, match="Elo model"):
        llr([1, 2, 3, 4, 5], 0, 5, "bayes")


def test_sprt_bounds_and_verdict() -> None:
    spec = SprtSpec(0, 5, 0.05, 0.05)
    # Wald's bounds: ln(beta / (1 - alpha)) and ln((1 - beta) / alpha), +-2.94 at 5%
    assert spec.lower_bound == pytest.approx(-2.944439, abs=1e-6)
    assert spec.upper_bound == pytest.approx(2.944439, abs=1e-6)
    assert SprtSpec(-3, 1, 0.05, 0.1).upper_bound == pytest.approx(math.log(0.9 / 0.05))
    assert spec.verdict(2.95) == "H1"
    assert spec.verdict(-2.95) == "H0"
    assert spec.verdict(2.9) is None
    for bad in ((5, 0, 0.05, 0.05), (0, 5, 0.0, 0.05), (0, 5, 0.05, 0.6)):
        with pytest.raises(ValueError, match="SPRT"):
            SprtSpec(*bad)


def test_pair_index() -> None:
    assert [pair_index(p) for p in (0, 0.5, 1, 1.5, 2)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="pair"):
        pair_index(2.5)


class _ScriptedPlay:
    """A stand-in for play_game returning engine1's result by game index; counts its calls."""

    def __init__(self, results: dict[int, str]) -> None:
        self.results = results
        self.played: list[int] = []

    def __call__(self, index: int, opening: Opening, engine1_white: bool,
                 seats: tuple[Seat, Seat], config: MatchConfig) -> GameResult:
        self.played.append(index)
        points = self.results.get(index, "draw")
        white_points = {"win": 1.0, "loss": 0.0, "draw": 0.5}[points]
        if not engine1_white:
            white_points = 1.0 - white_points
        result = {1.0: "1-0", 0.0: "0-1", 0.5: "1/2-1/2"}[white_points]
        return GameResult(index, opening.name, engine1_white, result, "scripted",
                          chess.pgn.Game())


SPECS = (EngineSpec("a", ["a"], {}), EngineSpec("b", ["b"], {}))


def test_sprt_stops_itself_at_the_upper_bound() -> None:
    # engine1 wins one game of each pair and draws the other: pair score 1.5 every time
    play = _ScriptedPlay({i: "win" for i in range(0, 10_000, 2)})
    spec = SprtSpec(0, 10, 0.05, 0.05)
    out = io.StringIO()
    tally = run_match(SPECS, load_openings(None), 10_000, CONFIG, 1, None, out=out, sprt=spec,
                      play=play)
    assert tally.verdict == "H1"
    assert tally.llr >= spec.upper_bound
    assert tally.games == len(play.played) == tally.verdict_games
    assert tally.games < 10_000 and tally.games % 2 == 0
    assert tally.pentanomial == [0, 0, 0, tally.games // 2, 0]
    # one pair fewer would not have crossed the bound: it stopped at the first pair that did
    fewer = [0, 0, 0, tally.games // 2 - 1, 0]
    assert llr(fewer, 0, 10) < spec.upper_bound
    text = sprt_report(tally, spec)
    assert "H1 accepted" in text and f"W {tally.wins} L 0 D {tally.draws}" in text
    assert f"[0, 0, 0, {tally.games // 2}, 0]" in text


def test_sprt_stops_itself_at_the_lower_bound_with_mixed_pairs() -> None:
    # a losing engine1: LL, LD and DD pairs in turn (pairs 0, 1, 2 of every three)
    results: dict[int, str] = {}
    for pair in range(5000):
        kind = pair % 3
        results[2 * pair] = "loss" if kind < 2 else "draw"
        results[2 * pair + 1] = "loss" if kind == 0 else "draw"
    play = _ScriptedPlay(results)
    spec = SprtSpec(0, 5, 0.05, 0.05)
    tally = run_match(SPECS, load_openings(None), 10_000, CONFIG, 2, None, out=io.StringIO(),
                      sprt=spec, play=play)
    assert tally.verdict == "H0"
    assert tally.llr <= spec.lower_bound
    pairs = tally.pairs
    assert tally.pentanomial[3:] == [0, 0] and sum(tally.pentanomial[:3]) == pairs
    # with two workers at most one game beyond the verdict's pair is played out
    assert tally.games <= tally.verdict_games + 1


def test_sprt_without_verdict_stops_at_the_game_limit() -> None:
    play = _ScriptedPlay({})  # all draws: no evidence either way within 20 games
    spec = SprtSpec(0, 5, 0.05, 0.05)
    tally = run_match(SPECS, load_openings(None), 20, CONFIG, 1, None, out=io.StringIO(),
                      sprt=spec, play=play)
    assert tally.verdict is None and tally.games == 20
    assert tally.pentanomial == [0, 0, 10, 0, 0]
    assert "no verdict after 20 games" in sprt_report(tally, spec)


def test_a_stopped_match_counts_the_games_finished_and_quits_the_running_ones() -> None:
    """Ctrl-C (SIGINT; ``main`` turns SIGTERM into the same) during game 5: games 1-4 are the
    result, the running game's engines are closed and no other game starts."""
    stopped_at = 4
    seen: list[int] = []
    closed: list[bool] = []

    def play(index: int, opening: Opening, engine1_white: bool, seats: tuple[Seat, Seat],
             config: MatchConfig) -> GameResult:
        seen.append(index)
        if index == stopped_at:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            # a real game ends when its engine quits; this one ends when its seat is closed
            closed.append(seats[0].closed.wait(timeout=60) and seats[1].closed.is_set())
        return GameResult(index, opening.name, engine1_white, "1-0", "scripted",
                          chess.pgn.Game())

    spec = SprtSpec(0, 10, 0.05, 0.05)
    # Python's own handler, which `python -m tools.match` runs with: the test runner's worker
    # processes (pytest-xdist) ignore SIGINT
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        tally = run_match(SPECS, load_openings(None), 100, CONFIG, 1, None, out=io.StringIO(),
                          sprt=spec, play=play)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert tally.stopped and closed == [True]
    assert seen == list(range(stopped_at + 1))
    assert tally.games == stopped_at and tally.wins == 2 and tally.losses == 2
    assert "no verdict after 4 games (the match was stopped)" in sprt_report(tally, spec)
    assert "+2 -2 =0" in report(tally, SPECS)


def test_a_second_sigterm_does_not_cut_the_stop_short() -> None:
    """``timeout`` sends SIGTERM to the match and then to its process group: the second one,
    arriving while the engines are being closed, must not end the match in a traceback."""
    second: list[bool] = []

    def play(index: int, opening: Opening, engine1_white: bool, seats: tuple[Seat, Seat],
             config: MatchConfig) -> GameResult:
        if index == 2:
            main_thread = threading.main_thread().ident or 0
            signal.pthread_kill(main_thread, signal.SIGTERM)
            second.append(seats[0].closed.wait(timeout=60))  # the stop has begun
            signal.pthread_kill(main_thread, signal.SIGTERM)
        return GameResult(index, opening.name, engine1_white, "1/2-1/2", "scripted",
                          chess.pgn.Game())

    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)
    try:
        tally = run_match(SPECS, load_openings(None), 100, CONFIG, 1, None,
                          out=io.StringIO(), play=play)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert second == [True]
    assert tally.stopped and tally.games == 2 and tally.draws == 2


def test_a_match_stopped_before_any_game_finished_reports_that() -> None:
    tally = run_match(SPECS, load_openings(None), 0, CONFIG, 1, None, out=io.StringIO())
    assert report(tally, SPECS) == "a vs b: no game finished"


def test_bench_output_parsing() -> None:
    kibitz = "position 40/40: 100 nodes\nNodes searched  : 606832\nNodes/second    : 1470000\n"
    assert parse_bench(kibitz) == (606832, 1470000)
    ethereal = "Time  : 55200ms\nNodes : 5132900\nNPS   : 92987\n"
    assert parse_bench(ethereal) == (5132900, 92987)
    assert parse_bench("usage: engine [options]") is None


def test_engine_aliases() -> None:
    phalanx = resolve_engine("phalanx")
    assert phalanx.protocol == "xboard" and phalanx.command[0].endswith("phalanx")
    assert phalanx.cwd is None and not phalanx.has_bench
    gnuchess = resolve_engine("gnuchess")
    assert gnuchess.protocol == "uci" and gnuchess.command[-1] == "--uci"
    assert not gnuchess.has_bench  # it would take `bench` for something else and hang
    assert resolve_engine("ethereal-chess").has_bench and resolve_engine("stockfish").has_bench
    custom = resolve_engine("./my-engine -x", "xboard")
    assert (custom.command, custom.protocol, custom.has_bench) == (["./my-engine", "-x"],
                                                                    "xboard", False)
    assert resolve_engine("./my-engine", None, bench=True).has_bench


def test_bench_signature_of_a_command(tmp_path: Path) -> None:
    script = tmp_path / "engine.py"
    script.write_text("import sys\nassert sys.argv[1:] == ['bench']\n"
                      "print('Nodes searched  : 1234')\nprint('Nodes/second    : 99')\n")
    spec = EngineSpec("e", [sys.executable, str(script)], {}, has_bench=True)
    assert bench_signature(spec) == (1234, 99)
    assert bench_signature(dataclasses.replace(spec, has_bench=False)) is None


def test_export_revision_plays_that_revision(tmp_path: Path) -> None:
    directory = export_revision("HEAD", cache_root=tmp_path)
    assert (directory / "engine" / "__main__.py").is_file()
    head = subprocess.run(["git", "show", "HEAD:engine/params.py"], check=True,
                          capture_output=True, text=True).stdout
    assert (directory / "engine" / "params.py").read_text() == head
    assert export_revision("HEAD", cache_root=tmp_path) == directory  # exported once
    with pytest.raises(SystemExit, match="not a git revision"):
        export_revision("no-such-revision-xyz", cache_root=tmp_path)
    # the exported engine answers UCI from its own directory
    reply = subprocess.run([sys.executable, "-c", "import engine, pathlib; "
                            "print(pathlib.Path(engine.__file__).parent.parent)"],
                           cwd=directory, check=True, capture_output=True, text=True).stdout
    assert Path(reply.strip()) == directory


def test_variant_names_and_openings() -> None:
    assert parse_variant("3check") is chess.variant.ThreeCheckBoard
    assert parse_variant("kingofthehill") is chess.variant.KingOfTheHillBoard
    with pytest.raises(argparse.ArgumentTypeError, match="unknown variant 'chesss'"):
        parse_variant("chesss")
    openings = load_openings(None, chess.variant.ThreeCheckBoard)
    for opening in openings:
        board = chess.variant.ThreeCheckBoard(opening.fen)
        for move in opening.moves:
            assert move in board.legal_moves
            board.push(move)


@pytest.mark.parametrize("variant", [chess.variant.ThreeCheckBoard,
                                     chess.variant.KingOfTheHillBoard])
def test_a_variant_game_is_refereed_by_its_rules(variant: type[chess.Board]) -> None:
    """Both engines are told the variant (python-chess sets UCI_Variant from the board)."""
    kibitz = resolve_engine("kibitz")
    seats = (Seat(kibitz), Seat(dataclasses.replace(kibitz, name="kibitz-2")))
    # no adjudication: the game ends by the rules
    config = dataclasses.replace(CONFIG, nodes=3000, board_class=variant, max_plies=300,
                                 win_cp=10**9, draw_min_ply=10**9)
    opening = load_openings(None, variant)[1]
    try:
        result = play_game(0, opening, True, seats, config)
    finally:
        for seat in seats:
            seat.discard()
    board = result.game.end().board()
    assert isinstance(board, variant) and result.game.headers["Variant"] == variant.aliases[0]
    outcome = board.outcome(claim_draw=True)
    assert outcome is not None, result.termination
    assert (result.result, result.termination) == (outcome.result(),
                                                   outcome.termination.name.lower())


def test_a_generated_book_is_balanced_new_and_repeatable(tmp_path: Path) -> None:
    from engine.search import Searcher
    from tools.match.make_openings import balanced_score_cp
    from tools.match.make_openings import main as make_openings

    book = tmp_path / "book.epd"
    assert make_openings(["--out", str(book), "--count", "12", "--depth", "3", "--max-cp", "60",
                          "--seed", "7"]) == 0
    fens = book.read_text().splitlines()
    assert len(fens) == len(set(fens)) == 12
    for fen in fens:
        board = chess.Board(fen)
        assert board.is_valid() and not board.is_game_over()
        assert board.ply() >= 2  # a named opening and more, never the start position
        score = balanced_score_cp(Searcher(1), board, 3)
        assert score is not None and abs(score) <= 60
    assert [o.fen for o in load_openings(book)] == fens
    again = tmp_path / "again.epd"
    make_openings(["--out", str(again), "--count", "12", "--depth", "3", "--max-cp", "60",
                   "--seed", "7"])
    assert again.read_text() == book.read_text()


def test_pooled_logs_pair_games_by_opening_whatever_order_they_finished_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.match.sprt_pool import main as sprt_pool

    first = tmp_path / "a.log"
    first.write_text(
        "kibitz vs kibitz@abc, up to 20000 games at 2+0.02\n"
        "game   2 book1.epd:1              kibitz black: 0-1     (checkmate)  score 1-0-0\n"
        "game   1 book1.epd:1              kibitz white: 1-0     (adjudication)  score 2-0-0"
        "  LLR +0.10\n"
        "game   3 book1.epd:2              kibitz white: 1/2-1/2 (threefold_repetition)  "
        "score 2-0-1\n"  # its pair's second game never finished
    )
    second = tmp_path / "b.log"
    second.write_text(
        "game   1 book2.epd:1              kibitz white: 0-1     (checkmate)  score 0-1-0\n"
        "game   2 book2.epd:1              kibitz black: 1/2-1/2 (fifty_moves)  score 0-1-1\n"
    )
    assert sprt_pool(["--sprt", "0", "10", "0.05", "0.05", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    # a: a pair won twice (WW) and a lone draw; b: a loss and a draw (LD)
    assert "games 5 from 2 logs: W 2 L 1 D 2" in out
    assert "[0, 1, 0, 0, 1]" in out
    assert f"LLR {llr([0, 1, 0, 0, 1], 0, 10):+.2f}" in out


def test_carried_counts_go_on_as_if_the_earlier_logs_were_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test moved to another machine: its earlier pool's printed counts, carried, give the
    same W/L/D, pairs and LLR as the earlier logs themselves."""
    from tools.match.sprt_pool import main as sprt_pool

    earlier = tmp_path / "earlier.log"
    earlier.write_text(
        "game   1 book1.epd:1              kibitz white: 1-0     (checkmate)  score 1-0-0\n"
        "game   2 book1.epd:1              kibitz black: 1/2-1/2 (fifty_moves)  score 1-0-1\n"
        "game   3 book1.epd:2              kibitz white: 1-0     (checkmate)  score 2-0-1\n"
        "game   4 book1.epd:2              kibitz black: 1-0     (checkmate)  score 2-1-1\n"
        "game   5 book1.epd:3              kibitz white: 1-0     (checkmate)  score 3-1-1\n"
    )
    later = tmp_path / "later.log"
    later.write_text(
        "game   1 book2.epd:4              kibitz white: 0-1     (checkmate)  score 0-1-0\n"
        "game   2 book2.epd:4              kibitz black: 0-1     (checkmate)  score 1-1-0\n"
    )
    assert sprt_pool(["--sprt", "0", "10", "0.05", "0.05", str(earlier), str(later)]) == 0
    both = capsys.readouterr().out
    # earlier: W 3 L 1 D 1, pairs WD and WL (DD+WL), game 5 alone
    assert sprt_pool(["--sprt", "0", "10", "0.05", "0.05",
                      "--carried", "3", "1", "1", "0", "0", "1", "1", "0", str(later)]) == 0
    carried = capsys.readouterr().out
    assert "from 1 logs and the carried counts: W 4 L 2 D 1" in carried
    assert "[0, 0, 2, 1, 0]" in carried
    assert carried.replace(" and the carried counts", "").replace("from 1 logs", "from 2 logs") \
        == both


@pytest.mark.parametrize(("counts", "named"), [
    (["1", "2", "3"], "expected 8 arguments"),
    (["1", "0", "0", "0", "0", "-1", "0", "0"], "negative"),
    (["1", "0", "0", "0", "0", "0", "0", "1"], "1 pairs need 2 games"),
    (["0", "2", "0", "0", "0", "0", "0", "1"], "cannot hold pairs worth 2"),
])
def test_carried_counts_that_no_pool_could_print_are_refused_by_name(
    capsys: pytest.CaptureFixture[str], counts: list[str], named: str
) -> None:
    from tools.match.sprt_pool import main as sprt_pool

    with pytest.raises(SystemExit):
        sprt_pool(["--sprt", "0", "10", "0.05", "0.05", "--carried", *counts])
    assert named in capsys.readouterr().err


def test_pooling_names_a_log_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.match.sprt_pool import main as sprt_pool

    with pytest.raises(SystemExit):
        sprt_pool(["--sprt", "0", "10", "0.05", "0.05", str(tmp_path / "missing.log")])
    assert "missing.log" in capsys.readouterr().err


def test_a_test_goes_on_from_the_openings_it_has_not_played(tmp_path: Path) -> None:
    """``--skip-openings N``: the first pair plays the book's opening N + 1 (both colours),
    named by its line, the next pair wraps round to the book's first, and a count the book
    cannot give is refused before any game."""
    first_move = f"{sys.executable} {Path(__file__).with_name('first_move_engine.py')}"
    book = tmp_path / "book.epd"
    fens = ["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1",
            "rnbqkbnr/pppppppp/8/8/2P5/8/PP1PPPPP/RNBQKBNR b KQkq - 0 1"]
    book.write_text("\n".join(fens) + "\n")
    pgn = tmp_path / "games.pgn"
    common = ["--engine1", first_move, "--engine2", first_move, "--name1", "a", "--name2", "b",
              "--no-bench", "--nodes", "1", "--openings", str(book), "--max-plies", "6"]
    assert main([*common, "--games", "4", "--skip-openings", "2", "--pgn", str(pgn)]) == 0
    with pgn.open() as handle:
        games = list(iter(lambda: chess.pgn.read_game(handle), None))
    starts = [(game.headers["Opening"], game.headers["FEN"]) for game in games]
    assert starts == [("book.epd:3", fens[2])] * 2 + [("book.epd:1", fens[0])] * 2
    with pytest.raises(SystemExit, match=r"--skip-openings 3: the book has only 3 openings"):
        main([*common, "--skip-openings", "3"])
    with pytest.raises(SystemExit, match="--skip-openings must be at least 0"):
        main([*common, "--skip-openings", "-1"])


def test_an_engine_that_is_not_installed_is_refused_by_name(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-engine")
    with pytest.raises(SystemExit, match=r"engine 'absent': .*no-such-engine is not installed"):
        main(["--engine1", "kibitz", "--engine2", missing, "--name2", "absent", "--games", "2",
              "--no-bench"])
    with pytest.raises(SystemExit, match=r"/usr/games/no-such-engine is not installed "
                                         r"\(`make opponents`"):
        main(["--engine1", "/usr/games/no-such-engine", "--engine2", "kibitz", "--no-bench"])


def test_each_engine_move_carries_its_score_depth_and_time_in_the_pgn() -> None:
    kibitz = resolve_engine("kibitz")
    seats = (Seat(kibitz), Seat(dataclasses.replace(kibitz, name="kibitz-2")))
    config = dataclasses.replace(CONFIG, nodes=800, max_plies=6, win_cp=10**9,
                                 draw_min_ply=10**9)
    opening = load_openings(None, chess.Board)[0]
    try:
        result = play_game(0, opening, True, seats, config)
    finally:
        for seat in seats:
            seat.discard()
    assert result.termination == "adjudication: move limit"
    nodes = list(result.game.mainline())
    assert len(nodes) == len(opening.moves) + 6
    assert all(node.comment == "" for node in nodes[:len(opening.moves)])
    pattern = re.compile(r"^([+-]\d+\.\d\d|[+-]M\d+)/\d+ \d+\.\d{3}s$")
    for node in nodes[len(opening.moves):]:
        assert pattern.match(node.comment), node.comment
    assert "{ " in str(result.game)


def test_a_move_comment_spells_mates_and_missing_scores() -> None:
    white_mates = chess.engine.PovScore(chess.engine.Mate(3), chess.WHITE)
    assert move_comment({"score": white_mates, "depth": 9}, 0.25) == "+M3/9 0.250s"
    black_is_mated = chess.engine.PovScore(chess.engine.Mate(-2), chess.BLACK)
    assert move_comment({"score": black_is_mated, "depth": 12}, 1.0) == "-M2/12 1.000s"
    worse = chess.engine.PovScore(chess.engine.Cp(-31), chess.BLACK)
    assert move_comment({"score": worse, "depth": 15}, 0.0125) == "-0.31/15 0.013s"
    assert move_comment({}, 0.5) == "?/? 0.500s"


def _stub(script: str, name: str, marker: Path) -> EngineSpec:
    """A stub engine of tests/engine named ``name``, its command line holding ``marker``;
    ``script`` may carry arguments."""
    path = Path(__file__).parent / script
    return dataclasses.replace(resolve_engine(f"{sys.executable} {path} {marker}"), name=name)


def test_an_engine_silent_past_its_clock_is_killed_and_loses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine that reads ``go`` and never answers (python-chess would wait for ever on a
    clocked search) is killed once its clock and the grace are spent, and loses the game by
    name; its seat starts a new process for the next game."""
    monkeypatch.setattr(referee, "HUNG_AFTER_S", 0.5)
    seats = (Seat(_stub("faulty_engine.py silent", "silent", tmp_path)),
             Seat(_stub("first_move_engine.py", "mover", tmp_path)))
    config = dataclasses.replace(CONFIG, base_s=0.25, increment_s=0.0)
    opening = Opening("start", chess.STARTING_FEN, ())
    try:
        result = play_game(0, opening, True, seats, config)
        assert seats[0].engine is None  # discarded: the next game starts another
    finally:
        for seat in seats:
            seat.discard()
    assert (result.result, result.termination) == (
        "0-1", "silent failed: gave no move within 0.75 s: killed")


def test_a_seat_starts_a_fresh_process_after_its_moves_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between games, a process that has made ``MOVES_PER_PROCESS`` moves is replaced (an
    engine that leaks a thread a search stops answering after some thousands); within a game
    it is kept."""
    monkeypatch.setattr(referee, "MOVES_PER_PROCESS", 3)
    seats = (Seat(_stub("first_move_engine.py", "a", tmp_path)),
             Seat(_stub("first_move_engine.py", "b", tmp_path)))
    config = dataclasses.replace(CONFIG, nodes=1, max_plies=4)
    opening = Opening("start", chess.STARTING_FEN, ())
    pids = []
    try:
        for index in range(3):
            result = play_game(index, opening, True, seats, config)
            assert result.termination == "adjudication: move limit"
            pids.append(tuple(seat.get().transport.get_pid() for seat in seats))
    finally:
        for seat in seats:
            seat.discard()
    # two moves a game each: the third game begins with four made, over the bound of three
    assert pids[0] == pids[1] and pids[2][0] != pids[1][0] and pids[2][1] != pids[1][1]
