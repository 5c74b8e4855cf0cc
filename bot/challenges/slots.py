"""The real-time game slots: the one rule for when the bot is busy, and what comes first.

`challenge.concurrency` slots, taken in this order of precedence:

1. games being played (a correspondence game holds none: it is visited on our turn);
2. arena pairings: while one of our arenas runs, `tournaments.slots` are kept free for them,
   less the arena games being played (lila pairs us without asking, so an arena game is
   never refused for want of a slot);
3. challenges accepted whose game has not started yet (ACCEPTED_TTL_S at most);
4. incoming challenges, queued while every slot is busy: one waiting makes our own
   matchmaking challenge give up its slot (`incoming_waits`);
5. our pending matchmaking challenge; matchmaking sends one only when the bot is `idle`:
   nothing played, accepted or queued, and no arena of ours running (unless
   `tournaments.pause_matchmaking` is off).

The queue (bot.challenges.queue), the arenas' pauses and matchmaking all ask here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Sized
from typing import Final, Protocol

from bot.lichess.events import Challenge, GameInfo
from bot.ops.config import TournamentsConfig
from bot.tournaments.rules import is_mandatory

log = logging.getLogger(__name__)

ACCEPTED_TTL_S: Final = 30.0  # an accepted challenge holds a slot until its gameStart, at most


def holds_slot(challenge: Challenge) -> bool:
    """Does the game of this challenge take one of the real-time slots (concurrency)?
    Correspondence and unlimited games (speed correspondence) are visited, never held."""
    return challenge.speed != "correspondence"


class Arenas(Protocol):
    """What the slots read of the arenas (bot.tournaments.desk.ArenaDesk)."""

    @property
    def config(self) -> TournamentsConfig: ...
    def running(self) -> Sized: ...


class Slots:
    """The slots of one running bot. `playing`: the real-time games being played (their
    gameStart, None when unknown); `waiting`: the queued challenges; `pending`: the slots
    our matchmaking challenge holds."""

    def __init__(self, concurrency: int, arenas: Arenas, *,
                 playing: Callable[[], Collection[GameInfo | None]],
                 waiting: Callable[[], Collection[Challenge]],
                 pending: Callable[[], int]) -> None:
        self.concurrency = concurrency  # challenge.concurrency
        self.arenas = arenas
        self.playing = playing
        self.waiting = waiting
        self.pending = pending
        self.accepted: dict[str, float] = {}  # challenge id -> when we accepted it
        self.accepting = True  # False once the bot stops: no new games
        self.changed = asyncio.Event()  # a slot may have freed, or a challenge came

    def busy(self) -> int:
        """Games in progress, challenges accepted whose game has not started yet, and our
        pending matchmaking challenge."""
        now = time.monotonic()
        for challenge_id, at in list(self.accepted.items()):
            if now - at > ACCEPTED_TTL_S:
                log.info("challenge %s was accepted but no game started", challenge_id)
                del self.accepted[challenge_id]
        return len(self.playing()) + len(self.accepted) + self.pending()

    def reserved(self) -> int:
        """Slots kept free for arena pairings: `tournaments.slots` for each of our arenas
        that runs and may still pair us, less the arena games already being played. lila
        pairs us in every arena we are on the list of, each on its own
        (modules/tournament/src/main/StartedOrganizer.scala, PlayerRepo.activeBotIds), so
        two running arenas may pair us twice at once: their slots are kept for both, and
        challenges get what is left of `challenge.concurrency` (none at worst: an arena
        pairing cannot be refused, a challenge can)."""
        running = len(self.arenas.running())
        if not running:
            return 0
        arena_games = sum(1 for info in self.playing() if is_mandatory(info))
        return max(0, self.arenas.config.slots * running - arena_games)

    def challenge_limit(self) -> int:
        """Real-time slots for challenges: the concurrency less the slots kept for arena
        pairings (arena games take slots of their own)."""
        return max(0, self.concurrency - self.reserved())

    def pauses_matchmaking(self) -> bool:
        """One of our arenas runs and `tournaments.pause_matchmaking` is on."""
        return self.arenas.config.pause_matchmaking and bool(self.arenas.running())

    def idle(self) -> bool:
        """Nothing to play and nothing waiting: matchmaking may look for a game."""
        return self.accepting and not (self.playing() or self.waiting() or self.accepted) \
            and not self.pauses_matchmaking()

    def incoming_waits(self) -> bool:
        """A queued real-time challenge finds every slot busy: an incoming game beats our
        own matchmaking challenge, which gives its slot up."""
        return self.accepting and any(holds_slot(c) for c in self.waiting()) \
            and self.busy() >= self.challenge_limit()
