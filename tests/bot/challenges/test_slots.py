"""The one busy rule: what holds a slot, the arena reserve, idleness, and when an incoming
challenge makes our matchmaking challenge give its slot up."""

from __future__ import annotations

import dataclasses
import time

from bot.challenges.slots import ACCEPTED_TTL_S, Slots, holds_slot
from bot.lichess.events import Challenge, GameInfo, TimeControl
from bot.ops.config import TournamentsConfig
from tests.bot.challenges.builders import challenge


@dataclasses.dataclass
class FakeArenas:
    config: TournamentsConfig = dataclasses.field(
        default_factory=lambda: TournamentsConfig(slots=1))
    arenas_running: int = 0

    def running(self) -> list[int]:
        return list(range(self.arenas_running))


@dataclasses.dataclass
class Board:
    """What the slots read: games being played, challenges queued, our pending challenge."""

    playing: list[GameInfo | None] = dataclasses.field(default_factory=list)
    waiting: list[Challenge] = dataclasses.field(default_factory=list)
    pending: int = 0
    arenas: FakeArenas = dataclasses.field(default_factory=FakeArenas)

    def slots(self, concurrency: int = 2) -> Slots:
        return Slots(concurrency, self.arenas, playing=lambda: self.playing,
                     waiting=lambda: self.waiting, pending=lambda: self.pending)


def game(tournament_id: str | None = None) -> GameInfo:
    return GameInfo(game_id="g", full_id="gabcd", color="white", variant="standard",
                    speed="blitz", rated=True, source="arena" if tournament_id else "friend",
                    status="started", opponent_id="bob", opponent_name="bob", winner=None,
                    tournament_id=tournament_id)


CORRESPONDENCE = challenge(speed="correspondence",
                           time_control=TimeControl("correspondence", 0.0, 0.0))


def test_correspondence_holds_no_slot() -> None:
    assert holds_slot(challenge())
    assert not holds_slot(CORRESPONDENCE)


def test_busy_counts_games_accepts_and_our_pending_challenge() -> None:
    board = Board(playing=[game()], pending=1)
    slots = board.slots()
    slots.accepted["abcd1234"] = time.monotonic()
    assert slots.busy() == 3


def test_an_accept_with_no_game_frees_its_slot_after_its_ttl() -> None:
    slots = Board().slots()
    slots.accepted["old"] = time.monotonic() - ACCEPTED_TTL_S - 1
    assert slots.busy() == 0
    assert "old" not in slots.accepted


def test_a_running_arena_reserves_its_slots_less_its_games() -> None:
    board = Board(arenas=FakeArenas(TournamentsConfig(slots=1), arenas_running=1))
    slots = board.slots(concurrency=3)
    assert slots.challenge_limit() == 2
    board.playing.append(game("AbCd1234"))
    assert slots.challenge_limit() == 3
    board.arenas.arenas_running = 0
    assert slots.challenge_limit() == 3


def test_each_running_arena_reserves_its_slots() -> None:
    """lila pairs us in each arena we are in: two running arenas keep two slots each of
    `tournaments.slots` 1; challenges get the rest, never less than none."""
    board = Board(arenas=FakeArenas(TournamentsConfig(slots=1), arenas_running=2))
    slots = board.slots(concurrency=3)
    assert (slots.reserved(), slots.challenge_limit()) == (2, 1)
    board.playing.append(game("AbCd1234"))
    assert (slots.reserved(), slots.challenge_limit()) == (1, 2)
    board.arenas.arenas_running = 3
    board.playing.clear()
    slots = board.slots(concurrency=2)
    assert (slots.reserved(), slots.challenge_limit()) == (3, 0)


def test_idle_wants_nothing_played_queued_accepted_nor_a_running_arena() -> None:
    board = Board()
    slots = board.slots()
    assert slots.idle()
    board.arenas.arenas_running = 1
    assert not slots.idle()  # pause_matchmaking is on by default
    board.arenas.config = TournamentsConfig(pause_matchmaking=False)
    assert slots.idle()
    board.waiting.append(challenge())
    assert not slots.idle()
    board.waiting.clear()
    slots.accepting = False
    assert not slots.idle()


def test_an_incoming_challenge_beats_our_matchmaking_challenge_only_when_slots_are_full() -> None:
    board = Board(playing=[game()], waiting=[challenge()], pending=1)
    slots = board.slots(concurrency=2)
    assert slots.incoming_waits()  # one game and our challenge fill both slots
    board.pending = 0
    assert not slots.incoming_waits()  # a slot is free: the challenge is simply taken
    board.pending = 1
    board.waiting = [CORRESPONDENCE]
    assert not slots.incoming_waits()  # a correspondence challenge needs no slot
