"""The challenge queue: every incoming challenge judged, then declined, or queued and
accepted in order when a slot frees (bot.challenges.slots decides when one is free).

Each challenge is answered exactly once: reconnects re-send challenges already answered,
and a challenge that waited may be declined at its turn when the situation changed, or
when its challenger left (lila sweeps a real-time challenge whose challenger is unseen).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any, Final

from bot.challenges.blocklists import BlockLists
from bot.challenges.judging import finer_verdict, judge, sort_queue
from bot.challenges.matchmaking import Matchmaker
from bot.challenges.opponents import OpponentBook, ratelimit_of
from bot.challenges.slots import Slots, holds_slot
from bot.challenges.terms import DeclineReason, Verdict, is_own_challenge
from bot.engines.engineset import EngineSet, challenge_facts
from bot.lichess.client import (
    BOT_DAY_KEY,
    Lichess,
    LichessError,
    RateLimited,
    RequestError,
    Unavailable,
)
from bot.lichess.events import Challenge
from bot.ops.config import ChallengeConfig

log = logging.getLogger(__name__)

MAX_QUEUE: Final = 50  # challenges waiting for a slot; more are declined "later"
REMEMBERED_CHALLENGES: Final = 2000  # ids answered already (reconnects re-send them)
QUEUE_TICK_S: Final = 5.0  # the challenge queue looks at expired accepts this often
# lila sweeps a real-time challenge "offline" once unseen for 20 s, silently, and it can still
# be accepted (modules/challenge/src/main/ChallengeApi.scala `sweep`): a game nobody plays.
# A challenge queued longer than this is accepted only while its challenger is online.
STALE_CHALLENGE_S: Final = 15.0

# Told of each decision (the challenge, its verdict, "queued", "accepted" or "declined").
Decided = Callable[[Challenge, Verdict, str], None]
# Runs a coroutine as a task of the bot's TaskGroup, under a name.
Spawn = Callable[[Coroutine[Any, Any, None], str], object]


def answer_key(challenge: Challenge) -> str:
    """What an answered challenge is remembered by. lila gives a rematch offer the id of
    the game it would start (modules/challenge ChallengeMaker.scala `makeRematch`:
    `rematches.offer` reserves the next game's id) and names the finished game in
    `rematchOf`; older lila used the finished game's id (lila#7718), which is also the id
    of the challenge that started that game, already answered. The prefix keeps the offer
    a new question either way."""
    return challenge.id if challenge.rematch_of is None else f"rematch {challenge.id}"


class ChallengeQueue:
    """The incoming challenges of one running bot."""

    def __init__(self, policy: ChallengeConfig, client: Lichess, me_id: str, slots: Slots, *,
                 book: OpponentBook, block_lists: BlockLists, engines: EngineSet,
                 matchmaker: Matchmaker, decided: Decided, spawn: Spawn) -> None:
        self.policy = policy
        self.client = client
        self.me_id = me_id
        self.slots = slots
        self.book = book
        self.block_lists = block_lists
        self.engines = engines
        self.matchmaker = matchmaker
        self.decided = decided
        self.spawn = spawn
        self.queue: deque[Challenge] = deque()
        self.queued_at: dict[str, float] = {}  # challenge id -> when it was queued
        self.answered: OrderedDict[str, None] = OrderedDict()

    def names(self) -> list[str]:
        """The challengers waiting, in order."""
        return [challenge.challenger.name for challenge in self.queue]

    def on_challenge(self, challenge: Challenge) -> None:
        if is_own_challenge(challenge, self.me_id):
            return
        cid = challenge.id
        if answer_key(challenge) in self.answered or cid in self.slots.accepted \
                or any(c.id == cid for c in self.queue):
            return  # re-sent after a reconnect
        verdict = judge(challenge, self.policy, self.book.situation(self.block_lists.names),
                        self.engines.variants_for(challenge_facts(challenge)))
        if verdict.accept and not self.slots.accepting:
            verdict = Verdict(DeclineReason.LATER, "shutting down")
        elif verdict.accept and len(self.queue) >= MAX_QUEUE:
            verdict = Verdict(DeclineReason.LATER, "the queue is full")
        who = f"{challenge.challenger.name} ({challenge.variant}, {challenge.speed}, " \
              f"{'rated' if challenge.rated else 'casual'})"
        self.decided(challenge, verdict, "queued" if verdict.accept else "declined")
        if verdict.accept:
            log.info("challenge %s from %s: queued", cid, who)
            self.queue.append(challenge)
            self.queued_at[cid] = time.monotonic()
            self.slots.changed.set()
            return
        log.info("challenge %s from %s: declining (%s: %s)", cid, who, verdict.reason, verdict.why)
        self._remember(answer_key(challenge))
        assert verdict.reason is not None
        self.spawn(self.decline(cid, verdict.reason), f"decline {cid}")

    async def decline(self, challenge_id: str, reason: DeclineReason) -> None:
        try:
            await self.client.decline_challenge(challenge_id, reason.value)
        except (RequestError, Unavailable) as exc:
            log.warning("decline %s: %s", challenge_id, exc)

    def _remember(self, key: str) -> None:
        self.answered[key] = None
        while len(self.answered) > REMEMBERED_CHALLENGES:
            self.answered.popitem(last=False)

    def forget(self, challenge_id: str, why: str) -> None:
        self.queued_at.pop(challenge_id, None)
        before = len(self.queue)
        self.queue = deque(c for c in self.queue if c.id != challenge_id)
        if len(self.queue) != before:
            log.info("challenge %s %s while queued", challenge_id, why)
        self.slots.accepted.pop(challenge_id, None)

    def decline_all(self) -> None:
        """A stopping bot declines what still waits ("later")."""
        for challenge in self.queue:
            self.spawn(self.decline(challenge.id, DeclineReason.LATER),
                       f"decline {challenge.id}")
        self.queue.clear()

    async def run(self) -> None:
        """Accept queued challenges in order whenever a slot is free."""
        slots = self.slots
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the shutdown's
            # cancellation when the slot frees at the same moment, and the loop never ends.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(QUEUE_TICK_S):
                    await slots.changed.wait()
            slots.changed.clear()
            limit = slots.challenge_limit()
            if slots.incoming_waits():
                await self.matchmaker.yield_slot()
            self.queue = deque(sort_queue(self.queue, self.policy.sort))
            while slots.accepting:
                # Correspondence games hold no real-time slot: they never wait for one.
                challenge = next((c for c in self.queue
                                  if not holds_slot(c) or slots.busy() < limit), None)
                if challenge is None:
                    break
                self.queue.remove(challenge)
                self._remember(answer_key(challenge))
                if await self._still_open(challenge):
                    await self._accept(challenge)

    async def _accept(self, challenge: Challenge) -> None:
        verdict = finer_verdict(challenge, self.policy,
                                self.book.situation(self.block_lists.names))
        if verdict.reason is not None:  # the situation changed while it waited
            log.info("challenge %s: declining (%s)", challenge.id, verdict.why)
            self.decided(challenge, verdict, "declined")
            await self.decline(challenge.id, verdict.reason)
            return
        if holds_slot(challenge):
            self.slots.accepted[challenge.id] = time.monotonic()
        try:
            await self.client.accept_challenge(challenge.id)
        except (RequestError, Unavailable) as exc:
            self.slots.accepted.pop(challenge.id, None)
            if isinstance(exc, RequestError) and exc.status == HTTPStatus.NOT_FOUND:
                # Canceled, or accepted elsewhere, while it waited: lila answers 404
                # (Challenge.scala apiAccept); nothing is lost.
                log.info("challenge %s is gone (404 on accept)", challenge.id)
                return
            log.warning("accept %s: %s", challenge.id, exc)
            self._on_accept_refused(challenge, exc)
            return
        log.info("accepted challenge %s from %s", challenge.id, challenge.challenger.name)
        self.decided(challenge, verdict, "accepted")
        self.book.engage(challenge.id, challenge.challenger.id,
                         bot=challenge.challenger.is_bot, started=False,
                         realtime=holds_slot(challenge))

    async def _still_open(self, challenge: Challenge) -> bool:
        """A real-time challenge queued for a while may have gone offline on lila with no
        event (ChallengeApi.scala `sweep`: its challenger unseen for 20 s); accepted, it
        starts a game nobody plays, and frequent aborts break Lichess's rules for bots.

        It is judged by the challenger's presence (`GET /api/users/status`, public), not by
        `GET /api/challenge/{id}/show`: lila answers that only to a token with
        challenge:read (Challenge.scala `apiShow`, AnonOrScoped(_.Challenge.Read)), which
        a bot does not otherwise need, and it has no stored challenge to show for a rematch
        offer (apiAccept's `tryRematch`). A rematch offer is fresh (its sender just played
        us); an anonymous challenger, or a failed look-up, leaves the challenge to be
        accepted: it is answered either way, never dropped."""
        queued_at = self.queued_at.pop(challenge.id, time.monotonic())
        waited_s = time.monotonic() - queued_at
        if not holds_slot(challenge) or waited_s < STALE_CHALLENGE_S \
                or challenge.rematch_of is not None or challenge.challenger.anonymous:
            return True
        try:
            online = await self.client.online_users([challenge.challenger.id])
        except (RequestError, Unavailable, LichessError) as exc:
            log.info("challenge %s: cannot see whether %s is online (%s); accepting it",
                     challenge.id, challenge.challenger.name, exc)
            return True
        if challenge.challenger.id in online:
            return True
        log.info("challenge %s: %s left after %.0f s in the queue: declining", challenge.id,
                 challenge.challenger.name, waited_s)
        self.decided(challenge, Verdict(DeclineReason.LATER, "gone offline"), "declined")
        await self.decline(challenge.id, DeclineReason.LATER)
        return False

    def _on_accept_refused(self, challenge: Challenge, exc: RequestError | Unavailable) -> None:
        """lila's BotLimit (app/controllers/Challenge.scala `eitherBotLimitResponse`): 429
        `bot.vsBot.day` is our own cap, so this and further bot challenges are declined
        until it lifts; 400 with that key is the challenger's cap, so only this challenger
        is turned away. Either way the challenge is answered, never left hanging."""
        key, _seconds = ratelimit_of(exc.body)
        if key != BOT_DAY_KEY:
            return
        self.book.note_refusal(exc)
        why = ("our games against bots for today are used up" if isinstance(exc, RateLimited)
               else f"{challenge.challenger.name} played its games against bots for today")
        log.info("challenge %s: declining (%s)", challenge.id, why)
        self.decided(challenge, Verdict(DeclineReason.LATER, why), "declined")
        self.spawn(self.decline(challenge.id, DeclineReason.LATER), f"decline {challenge.id}")
