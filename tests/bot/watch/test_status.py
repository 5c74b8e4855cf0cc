"""The one-line summary, the live view, and the status task."""

from __future__ import annotations

import asyncio
import datetime
import io
import logging

import chess
import chess.engine
import pytest

from bot.engines.searchline import SearchLine
from bot.game.game import GameSnapshot
from bot.game.hooks import GameContext
from bot.lichess.events import Player
from bot.ops.logs import setup_logging
from bot.watch.status import (
    GameTally,
    GameView,
    StatusSnapshot,
    format_clock,
    live_lines,
    run_status,
    summary_line,
    view_of,
)
from tests.bot.e2e_support import GUARD_S
from tests.bot.stepped_time import SteppedTime

GAMES = (
    GameView("Qa7bX1pz", "alice", "white", 62.4, 58.0, "+0.35", "23. Nf3", "Nf3 Nc6 Bb5", True),
    GameView("Zz9yY8xx", "a-very-long-user-name-indeed", "black", 5.25, 3725.0),
)


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "-"), (0.0, "0:00.0"), (-3.0, "0:00.0"), (9.96, "0:10.0"), (9.94, "0:09.9"),
    (10.0, "0:10"), (62.4, "1:02"), (3725.0, "1:02:05"),
])
def test_clocks(seconds: float | None, shown: str) -> None:
    assert format_clock(seconds) == shown


def test_summary_line() -> None:
    snapshot = StatusSnapshot(GAMES, challenges_queued=1, games_today=7)
    assert summary_line(snapshot) == (
        "2 games: Qa7bX1pz vs alice (white, 1:02 v 0:58, +0.35); "
        "Zz9yY8xx vs a-very-long-user-name-indeed (black, 0:05.2 v 1:02:05) "
        "| 1 challenge queued | 7 games today")
    assert summary_line(StatusSnapshot(stopping=True)) == (
        "no games in progress | 0 challenges queued | 0 games today | stopping")


def test_live_view() -> None:
    lines = live_lines(StatusSnapshot(GAMES, games_today=2))
    assert lines[0] == "── 2 games in progress | 0 challenges queued | 2 games today ──"
    assert lines[1] == ("*Qa7bX1pz white vs alice           1:02/0:58     +0.35  "
                        "23. Nf3      Nf3 Nc6 Bb5")
    assert lines[2] == " Zz9yY8xx black vs a-very-long-  0:05.2/1:02:05"


def test_arenas_are_shown_after_the_totals_and_under_the_header() -> None:
    arena = "arena Hourly Bullet (AbCd1234): rank 3/40, 12 points, 5 games, 12:34 left"
    snapshot = StatusSnapshot(arenas=(arena,))
    assert summary_line(snapshot) == (
        f"no games in progress | 0 challenges queued | 0 games today | {arena}")
    assert live_lines(StatusSnapshot(GAMES, arenas=(arena,)))[1] == arena


def test_games_today_rolls_over_at_midnight() -> None:
    day = [datetime.date(2026, 1, 1)]
    tally = GameTally(today=lambda: day[0])
    for game_id in ("a", "b", "a"):
        tally.started(game_id)
    assert tally.count() == 2
    day[0] = datetime.date(2026, 1, 2)
    assert tally.count() == 0


async def test_summary_goes_to_the_log_and_to_systemd() -> None:
    out = io.StringIO()
    handler = setup_logging("info", stream=out, environ={})
    sent: list[str] = []
    time = SteppedTime(until_s=1.5)
    task = asyncio.create_task(run_status(lambda: StatusSnapshot(GAMES[:1]), interval_s=1.0,
                                          notify=sent.append, notify_every_s=0.25,
                                          now=time.now, sleep=time.sleep))
    await time.run_until_reached(task)
    logging.getLogger().removeHandler(handler)
    summary = "1 game: Qa7bX1pz vs alice (white, 1:02 v 0:58, +0.35)"
    assert len(sent) == 6  # at once, then every 0.25 s until 1.25 s
    assert all(line.startswith("STATUS=" + summary) for line in sent)
    logged = [line for line in out.getvalue().splitlines() if "status: " in line]
    assert len(logged) == 1 and logged[0].endswith(f"status: {summary} | 0 challenges queued"
                                                   " | 0 games today")


async def test_live_view_is_drawn_and_removed() -> None:
    out = io.StringIO()
    handler = setup_logging("info", stream=out, environ={})
    time = SteppedTime(until_s=1.0)
    task = asyncio.create_task(run_status(lambda: StatusSnapshot(GAMES), interval_s=0,
                                          live=handler, live_refresh_s=0.25,
                                          now=time.now, sleep=time.sleep))
    await time.run_until_reached(task)
    logging.getLogger().removeHandler(handler)
    assert time.sleeps == [0.25] * 4  # redrawn at 0, 0.25, 0.5 and 0.75 s
    text = out.getvalue()
    assert "── 2 games in progress" in text
    assert text.endswith("\x1b[3F\x1b[J")  # the three lines erased at the end
    assert handler.overlay is None


async def test_nothing_to_do_returns_at_once() -> None:
    await asyncio.wait_for(run_status(StatusSnapshot, interval_s=0), timeout=GUARD_S)


def test_short_scores_are_from_our_side() -> None:
    import chess.engine

    from bot.watch.status import short_score

    white_up = chess.engine.PovScore(chess.engine.Cp(35), chess.WHITE)
    assert short_score(white_up, chess.WHITE) == "+0.35"
    assert short_score(white_up, chess.BLACK) == "-0.35"
    we_mate = chess.engine.PovScore(chess.engine.Mate(3), chess.BLACK)
    assert short_score(we_mate, chess.BLACK) == "#3"
    assert short_score(we_mate, chess.WHITE) == "#-3"
    assert short_score(None, chess.WHITE) == ""


async def test_a_broken_snapshot_never_stops_the_status(
        caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    def flaky() -> StatusSnapshot:
        nonlocal calls
        calls += 1
        if calls % 2 == 0:
            raise RuntimeError("a game changed under us")
        return StatusSnapshot(GAMES[:1])

    sent: list[str] = []
    time = SteppedTime(until_s=2.0)
    task = asyncio.create_task(run_status(flaky, interval_s=0, notify=sent.append,
                                          notify_every_s=0.25, now=time.now, sleep=time.sleep))
    await asyncio.wait_for(time.reached.wait(), GUARD_S)
    assert not task.done()  # four of the eight snapshots failed
    await time.run_until_reached(task)
    assert calls == 8
    assert len(sent) == 8 and all("Qa7bX1pz vs alice" in line for line in sent)
    assert "cannot take the status snapshot" in caplog.text


def test_a_game_is_shown_from_its_public_snapshot() -> None:
    board = chess.Board()
    for san in ("e4", "e5", "Nf3"):
        board.push_san(san)
    searched = chess.Board()
    searched.push_san("e4")
    searched.push_san("e5")
    line = SearchLine(score=chess.engine.PovScore(chess.engine.Cp(35), chess.WHITE),
                      pv=(chess.Move.from_uci("g1f3"), chess.Move.from_uci("b8c6")))
    context = GameContext(game_id="Qa7bX1pz", variant="standard", speed="blitz", rated=True,
                          me="kibitz", color=chess.WHITE,
                          white=Player("kibitz", "kibitz", "BOT", 2000),
                          black=Player("alice", "alice", None, 1900), initial_fen="startpos",
                          clock_initial_s=60.0, clock_increment_s=0.0)
    view = view_of(GameSnapshot(game_id="Qa7bX1pz", context=context, board=board,
                                our_clock_s=62.4, their_clock_s=58.0,
                                last_search=(searched, line), our_turn=False))
    assert view == GameView("Qa7bX1pz", "alice", "white", 62.4, 58.0, "+0.35", "2. Nf3",
                            "Nf3 Nc6", False)


def test_the_engine_playing_is_shown_when_several_are_configured() -> None:
    game = GameView("Qa7bX1pz", "alice", "white", 62.4, 58.0, "+0.35", engine="fairy")
    snapshot = StatusSnapshot((game,))
    assert summary_line(snapshot).startswith(
        "1 game: Qa7bX1pz vs alice (white, 1:02 v 0:58, +0.35, on fairy) |")
    assert live_lines(snapshot)[1] == (
        " Qa7bX1pz white vs alice        [fairy]    1:02/0:58     +0.35")


def test_the_last_move_is_numbered_as_a_pv_is() -> None:
    """Black's last move reads "2...Nc6", as pv_san writes it in chat and on the page."""
    board = chess.Board()
    for san in ("e4", "e5", "Nf3", "Nc6"):
        board.push_san(san)
    context = GameContext(game_id="Qa7bX1pz", variant="standard", speed="blitz", rated=True,
                          me="kibitz", color=chess.WHITE,
                          white=Player("kibitz", "kibitz", "BOT", 2000),
                          black=Player("alice", "alice", None, 1900), initial_fen="startpos",
                          clock_initial_s=60.0, clock_increment_s=0.0)
    view = view_of(GameSnapshot(game_id="Qa7bX1pz", context=context, board=board,
                                our_clock_s=62.4, their_clock_s=58.0, last_search=None,
                                our_turn=True))
    assert view.moves == "2...Nc6"


def test_the_level_of_each_game_is_shown() -> None:
    from bot.watch.view import card

    context = GameContext(game_id="Qa7bX1pz", variant="standard", speed="blitz", rated=False,
                          me="kibitz", color=chess.WHITE,
                          white=Player("kibitz", "kibitz", "BOT", 2000),
                          black=Player("alice", "alice", None, 1200), initial_fen="startpos",
                          clock_initial_s=180.0, clock_increment_s=2.0)
    snapshot = GameSnapshot(game_id="Qa7bX1pz", context=context, board=chess.Board(),
                            our_clock_s=62.4, their_clock_s=58.0, last_search=None,
                            our_turn=True, strength="Elo 900")
    view = view_of(snapshot)
    assert view.strength == "Elo 900"
    assert summary_line(StatusSnapshot((view,))).startswith(
        "1 game: Qa7bX1pz vs alice (white, 1:02 v 0:58, Elo 900) |")
    assert "vs alice        (Elo 900)" in live_lines(StatusSnapshot((view,)))[1]
    assert card(snapshot, base_url="https://lichess.org")["strength"] == "Elo 900"
