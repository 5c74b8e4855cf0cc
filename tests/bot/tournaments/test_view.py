"""`GET /api/tournament/{id}` read into an ArenaView."""

from __future__ import annotations

import pytest

from bot.tournaments.view import ArenaFormatError, parse_view, sheet_of


def test_a_running_arena_with_us_in_it() -> None:
    view = parse_view({
        "id": "AbCd1234", "fullName": "Hourly Bullet Arena", "system": "arena",
        "isStarted": True, "secondsToFinish": 200, "nbPlayers": 40,
        "clock": {"limit": 60, "increment": 0},
        "me": {"rank": 12, "withdraw": False},
        "verdicts": {"list": [{"condition": "Bot players are allowed", "verdict": "ok"}],
                     "accepted": True}})
    assert (view.running, view.joined, view.rank, view.bots_refused) == (True, True, 12, False)
    assert view.seconds_to_pairings_close == 170  # max(30, min(60 / 2, 120)) before the end
    closing = parse_view({"id": "AbCd1234", "isStarted": True, "secondsToFinish": 20,
                          "pairingsClosed": True, "clock": {"limit": 300}})
    assert closing.pairings_closed and closing.seconds_to_pairings_close == 0


def test_bots_refused_and_bad_replies() -> None:
    refused = parse_view({"id": "AbCd1234", "secondsToStart": 30, "verdicts": {
        "list": [{"condition": "Bot players are not allowed",
                  "verdict": "Bot players are not allowed"}], "accepted": False}})
    assert refused.bots_refused and not refused.joined and refused.status == "created"
    # lila never writes `botsAllowed: false` (JsonView.scala adds it only when true): the
    # verdicts alone say whether we are refused.
    assert not parse_view({"id": "AbCd1234", "botsAllowed": False}).bots_refused
    with pytest.raises(ArenaFormatError, match="is not an arena"):
        parse_view({"id": "AbCd1234", "system": "swiss"})
    with pytest.raises(ArenaFormatError, match="'secondsToStart' must be a number"):
        parse_view({"id": "AbCd1234", "secondsToStart": "soon"})


def test_our_line_of_the_standing_as_a_string_or_a_list() -> None:
    page = {"standing": {"players": [
        {"name": "Other", "score": 9, "sheet": {"scores": "45"}},
        {"name": "Kibitz", "score": 5, "sheet": {"scores": "2021"}}]}}
    sheet = sheet_of(page, "kibitz")
    assert sheet is not None and (sheet.score, sheet.games) == (5, 4)
    listed = {"standing": {"players": [{"name": "kibitz", "score": 6,
                                        "sheet": {"scores": [[4, 3], 2]}}]}}
    sheet = sheet_of(listed, "Kibitz")
    assert sheet is not None and (sheet.score, sheet.games) == (6, 2)
    assert sheet_of(page, "nobody") is None
