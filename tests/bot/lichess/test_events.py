"""Parsing the stream lines into typed events; bad lines give errors that name the field."""

from __future__ import annotations

import contextlib
from typing import Any

import chess
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.lichess.events import (
    ChallengeCanceled,
    ChallengeDeclined,
    ChallengeEvent,
    ChatLine,
    EventError,
    GameFinish,
    GameFull,
    GameStart,
    GameState,
    GameStatus,
    OpponentGone,
    SideClock,
    SideOffers,
    UnknownEvent,
    parse_event,
    parse_game_event,
)

# JSON as the stream decodes it: any value under any key.
GAME_START: dict[str, Any] = {"type": "gameStart", "game": {
    "fullId": "0FgNPGRzhDaW", "gameId": "0FgNPGRz", "fen": "startpos", "color": "white",
    "lastMove": "", "source": "friend", "status": {"id": 20, "name": "started"},
    "variant": {"key": "standard", "name": "Standard"}, "speed": "blitz", "perf": "blitz",
    "rated": True, "hasMoved": False, "opponent": {"id": "aaron", "username": "Aaron",
                                                   "rating": 776},
    "isMyTurn": True, "secondsLeft": 300, "compat": {"bot": False, "board": True},
    "id": "0FgNPGRz"}}

GAME_FULL = {"type": "gameFull", "id": "BEOucQJo",
             "variant": {"key": "standard", "name": "Standard", "short": "Std"},
             "clock": {"initial": 900000, "increment": 2000}, "speed": "rapid",
             "perf": {"name": "Rapid"}, "rated": False, "createdAt": 1745112707998,
             "white": {"id": "bobby", "name": "Bobby", "title": None, "rating": 1751},
             "black": {"aiLevel": 3}, "initialFen": "startpos",
             "state": {"type": "gameState", "moves": "e2e4 e7e5", "wtime": 900000,
                       "btime": 899000, "winc": 2000, "binc": 2000, "status": "started",
                       "bdraw": True}}


def test_event_stream_lines() -> None:
    start = parse_event(GAME_START)
    assert isinstance(start, GameStart)
    assert start.game.game_id == "0FgNPGRz" and start.game.color == "white"
    assert start.game.status == "started" and start.game.opponent_name == "Aaron"
    assert start.game.opponent_rating == 776  # the engine rules' rating conditions read it
    finish = parse_event({**GAME_START, "type": "gameFinish",
                          "game": {**GAME_START["game"],
                                   "status": {"id": 31, "name": "resign"}, "winner": "black"}})
    assert isinstance(finish, GameFinish) and finish.game.winner == "black"
    # lila Namer: a titled opponent is "TITLE name", one not logged in "Anon.".
    for shown, name in (("BOT Sparring", "Sparring"), ("GM Aaron", "Aaron"),
                        ("Anon.", "Anon."), ("Botvinnik", "Botvinnik")):
        game = {**GAME_START["game"], "opponent": {"id": None, "username": shown}}
        titled = parse_event({**GAME_START, "game": game})
        assert isinstance(titled, GameStart) and titled.game.opponent_name == name
        assert titled.game.opponent_rating is None
    assert parse_event({"type": "challengeCanceled", "challenge": {"id": "x1"}}) == \
        ChallengeCanceled("x1")
    assert parse_event({"type": "challengeDeclined",
                        "challenge": {"id": "x2", "declineReasonKey": "toofast"}}) == \
        ChallengeDeclined("x2", "toofast")
    assert parse_event({"type": "somethingNew", "x": 1}) == UnknownEvent("somethingNew")


def test_a_challenge_event() -> None:
    event = parse_event({"type": "challenge", "compat": {"bot": True}, "challenge": {
        "id": "c1", "status": "created", "challenger": {"id": "al", "name": "Al"},
        "destUser": None, "variant": {"key": "chess960"}, "rated": False, "speed": "bullet",
        "timeControl": {"type": "clock", "limit": 60, "increment": 1}, "color": "random"}})
    assert isinstance(event, ChallengeEvent)
    assert event.challenge.variant == "chess960" and event.challenge.dest is None
    assert event.challenge.time_control.increment_s == 1
    anonymous = parse_event({"type": "challenge", "challenge": {
        "id": "c2", "status": "created", "challenger": None, "destUser": {"id": "me"},
        "variant": {"key": "standard"}, "rated": False, "speed": "blitz",
        "timeControl": {"type": "clock", "limit": 180, "increment": 2}}})
    assert isinstance(anonymous, ChallengeEvent)  # lila: null for a challenger not logged in
    assert anonymous.challenge.challenger.anonymous
    assert not anonymous.challenge.challenger.is_bot


def test_game_stream_lines_in_seconds() -> None:
    full = parse_game_event(GAME_FULL)
    assert isinstance(full, GameFull)
    assert full.clock_initial_s == 900.0 and full.clock_increment_s == 2.0
    assert full.black.ai_level == 3 and full.black.name == "AI level 3"
    assert full.state.moves == ("e2e4", "e7e5") and full.state.btime_s == 899.0
    assert full.state.bdraw and not full.state.wdraw and not full.state.is_over
    state = parse_game_event({"type": "gameState", "moves": "", "wtime": 1, "btime": 2,
                              "winc": 0, "binc": 0, "status": "aborted"})
    assert isinstance(state, GameState) and state.moves == () and state.is_over
    assert parse_game_event({"type": "chatLine", "room": "player", "username": "u",
                             "text": "hi"}) == ChatLine("player", "u", "hi")
    assert parse_game_event({"type": "opponentGone", "gone": True,
                             "claimWinInSeconds": 8}) == OpponentGone(True, 8.0)


@pytest.mark.parametrize(("raw", "field"), [
    ([1, 2], "JSON object"),
    ({"no": "type"}, "type"),
    ({"type": "gameStart", "game": "x"}, "'game'"),
    ({"type": "gameStart", "game": {"gameId": 5}}, "'gameId'"),
    ({"type": "challenge", "challenge": {"id": "c", "challenger": {"id": "a"},
                                         "variant": {"key": "standard"}, "speed": "blitz",
                                         "rated": "yes", "timeControl": {"type": "clock",
                                                                         "limit": 1}}},
     "'rated'"),
])
def test_malformed_events_name_the_field(raw: object, field: str) -> None:
    with pytest.raises(EventError, match=field):
        parse_event(raw)


@pytest.mark.parametrize(("raw", "field"), [
    ({"type": "gameState", "moves": 5}, "'moves'"),
    ({"type": "gameState", "moves": "", "wtime": "soon"}, "'wtime'"),
    ({"type": "gameState", "moves": "", "winner": "green"}, "'winner'"),
    ({"type": "gameFull", "id": "x", "variant": {"key": "standard"}, "white": {},
      "black": {}}, "'state'"),
    ({"type": "chatLine", "room": "player", "username": None, "text": "x"}, "'username'"),
])
def test_malformed_game_events_name_the_field(raw: object, field: str) -> None:
    with pytest.raises(EventError, match=field):
        parse_game_event(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "game", "moves", "wtime", "challenge", "id", "status"]),
        inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_any_json_gives_an_event_or_an_event_error(raw: object) -> None:
    for parse in (parse_event, parse_game_event):
        with contextlib.suppress(EventError):
            parse(raw)


def test_a_state_reads_each_sides_clock_and_offers() -> None:
    state = GameState(("e2e4",), 50.0, 40.0, 1.0, 2.0, "started", wdraw=True, btakeback=True)
    assert state.clock_for(chess.WHITE) == SideClock(50.0, 1.0)
    assert state.clock_for(chess.BLACK) == SideClock(40.0, 2.0)
    assert state.offers_for(chess.WHITE) == SideOffers(draw=True, takeback=False)
    assert state.offers_for(chess.BLACK) == SideOffers(draw=False, takeback=True)
    assert not state.is_over
    assert GameState((), 1.0, 1.0, 0.0, 0.0, GameStatus.MATE).is_over
    assert GameState((), 1.0, 1.0, 0.0, 0.0, "someStatusAddedLater").is_over


def test_an_arena_game_carries_its_tournament_id() -> None:
    """lila's GameEventInfo adds `tournamentId` for an arena game (and nothing otherwise)."""
    plain = parse_event(GAME_START)
    assert isinstance(plain, GameStart) and plain.game.tournament_id is None
    arena = parse_event({**GAME_START, "game": {**GAME_START["game"],
                                                "source": "arena", "tournamentId": "x3Gk2Lp"}})
    assert isinstance(arena, GameStart) and arena.game.tournament_id == "x3Gk2Lp"
