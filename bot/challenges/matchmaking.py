"""Matchmaking: when the bot has been idle for a while, challenge another online bot.

One challenge at a time. Its time control, variant and mode are drawn by the configured
weights; the opponent is an online bot rated within the window around our rating in that
perf, one we have not played much lately. Colours alternate.

Lichess's limits are respected and remembered in the state directory across restarts:
- our daily bot-vs-bot cap (429, `ratelimit.key == "bot.vsBot.day"`): no challenge until
  the seconds given have passed; any other 429 pauses matchmaking the same way;
- the opponent's cap (400 with that key): that opponent is skipped for the seconds given;
- challenge credits: at most `daily_challenges` challenges in any 24 hours;
- a challenge declined, or not accepted in `challenge_timeout_s`, backs off that opponent
  with that time control, doubling up to `max_backoff_s`; a game that starts resets it.

The pending challenge holds a real-time slot (`pending_count`); matchmaking sends one only
while the slots say the bot is idle (bot.challenges.slots `idle`), and the queue cancels it
(`yield_slot`) when the slots say an incoming challenge needs its slot (`incoming_waits`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp

from bot.challenges.judging import perf_of
from bot.challenges.opponents import OpponentBook, ratelimit_of, ratings_from_account
from bot.lichess.client import (
    BOT_DAY_KEY,
    AuthError,
    Lichess,
    LichessError,
    RateLimited,
    RequestError,
    Unavailable,
)
from bot.lichess.events import GameInfo
from bot.ops.config import Config, parse_time_control
from bot.ops.statefile import load_state, number, save_state

log = logging.getLogger(__name__)

STATE_FILE: Final = "matchmaking.json"
CREATE_KIND: Final = "challenge:create"  # its own 429 bucket: accepts and declines go on
ONLINE_BOTS: Final = 200  # how many online bots to look through
TICK_S: Final = 0.25  # how often the idle clock and the pending challenge are looked at
NO_OPPONENT_WAIT_S: Final = 60.0  # nobody suitable online: look again after this
REQUEST_DEADLINE_S: Final = 10.0  # one create/cancel request, retries included
DAY_S: Final = 86400.0
DEFAULT_RATING: Final = 1500  # the rating of a perf never played
# An opponent at its daily bot-game cap, when the reply does not say for how long: its window
# is a rolling day, so an hour is a polite first guess that does not lose it for a whole day.
CAPPED_OPPONENT_DEFAULT_S: Final = 3600.0


@dataclass(frozen=True, slots=True)
class Offer:
    """One challenge we may send."""

    opponent: str  # user id (lower-case)
    name: str
    time_control: str  # as configured: "3+2" or "2d"
    variant: str
    rated: bool
    color: str

    @property
    def key(self) -> str:
        """What back-off is kept by: the opponent and the time control."""
        return f"{self.opponent}|{self.time_control}"

    def form(self) -> dict[str, str]:
        limit_s, increment_s, days = parse_time_control(self.time_control)
        fields = {"rated": "true" if self.rated else "false", "color": self.color,
                  "variant": self.variant}
        if days is not None:
            fields["days"] = str(days)
        else:
            fields["clock.limit"] = str(limit_s)
            fields["clock.increment"] = str(increment_s)
        return fields


def speed_of(time_control: str) -> str:
    """The Lichess speed of a configured time control (limit + 40 x increment)."""
    limit_s, increment_s, days = parse_time_control(time_control)
    if days is not None:
        return "correspondence"
    estimate_s = limit_s + 40 * increment_s
    for bound_s, speed in ((30, "ultraBullet"), (180, "bullet"), (480, "blitz"),
                           (1500, "rapid")):
        if estimate_s < bound_s:
            return speed
    return "classical"


def weighted_order(weights: Mapping[str, float], rng: random.Random) -> list[str]:
    """All choices with weight > 0, drawn one after another by weight (no repeats)."""
    left = {name: weight for name, weight in weights.items() if weight > 0}
    order = []
    while left:
        name = rng.choices(list(left), weights=list(left.values()))[0]
        order.append(name)
        del left[name]
    return order


def capped_key(opponent_id: str) -> str:
    """The back-off key of an opponent at its daily bot-game cap (every time control)."""
    return f"{opponent_id.lower()}|capped"


class MatchState:
    """What matchmaking remembers across restarts (wall-clock times)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = load_state(path)
        backoff = raw.get("backoff")
        self.backoff: dict[str, tuple[float, int]] = {}  # key -> (until, level)
        if isinstance(backoff, dict):
            for key, entry in backoff.items():
                if isinstance(entry, list) and len(entry) == 2:
                    self.backoff[str(key)] = (number(entry[0]), int(number(entry[1])))
        self.paused_until = number(raw.get("paused_until"))
        self.pause_reason = str(raw.get("pause_reason") or "")
        last = raw.get("last_color")
        self.last_color = last if last in ("white", "black") else "black"
        sent = raw.get("sent")
        self.sent = [number(t) for t in sent] if isinstance(sent, list) else []

    def save(self) -> None:
        now = time.time()
        self.backoff = {k: v for k, v in self.backoff.items() if v[0] > now}
        self.sent = [t for t in self.sent if now - t < DAY_S]
        save_state(self.path, {
            "backoff": {k: list(v) for k, v in self.backoff.items()},
            "paused_until": self.paused_until, "pause_reason": self.pause_reason,
            "last_color": self.last_color, "sent": self.sent,
        })

    def backed_off(self, key: str, now: float) -> bool:
        return self.backoff.get(key, (0.0, 0))[0] > now

    def back_off(self, key: str, base_s: float, cap_s: float, now: float) -> float:
        """Back off `key` once more (doubling); the wait in seconds."""
        level = self.backoff.get(key, (0.0, 0))[1]
        wait_s = min(cap_s, base_s * 2.0**level)
        self.backoff[key] = (now + wait_s, level + 1)
        self.save()
        return wait_s

    def skip_for(self, key: str, wait_s: float, now: float) -> None:
        """Leave `key` alone for exactly `wait_s` (the opponent's daily cap)."""
        level = self.backoff.get(key, (0.0, 0))[1]
        self.backoff[key] = (now + wait_s, level)
        self.save()

    def reset(self, key: str) -> None:
        if self.backoff.pop(key, None) is not None:
            self.save()

    def pause(self, wait_s: float, reason: str, now: float) -> None:
        self.paused_until = max(self.paused_until, now + wait_s)
        self.pause_reason = reason
        self.save()

    def next_color(self) -> str:
        self.last_color = "black" if self.last_color == "white" else "white"
        return self.last_color

    def credits_wait_s(self, per_day: int, now: float) -> float:
        """Seconds until one more challenge fits the daily budget (0: now)."""
        recent = sorted(t for t in self.sent if now - t < DAY_S)
        if len(recent) < per_day:
            return 0.0
        return recent[len(recent) - per_day] + DAY_S - now


@dataclass(slots=True)
class Pending:
    challenge_id: str
    offer: Offer
    sent_at: float  # monotonic


class Matchmaker:
    """Sends challenges while the bot is idle; one per bot process."""

    def __init__(self, config: Config, client: Lichess, me_id: str, book: OpponentBook, *,
                 is_idle: Callable[[], bool], blocked: Callable[[], frozenset[str]],
                 playable: Callable[[], frozenset[str]] | None = None,
                 rng: random.Random | None = None,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.config = config
        self.settings = config.matchmaking
        self.client = client
        self.me_id = me_id.lower()
        self.book = book
        self.is_idle = is_idle
        self.blocked = blocked
        self.playable = playable  # the variants the engine plays (None: every one)
        self.rng = rng or random.Random()
        self.state = MatchState(config.state_dir / STATE_FILE)
        self.pending: Pending | None = None
        self._idle_since: float | None = None
        self._retry_at = 0.0  # monotonic: nobody suitable was online
        self._waiting = False  # a pause or the daily budget holds us back (logged once)
        # The idle timer's clock, injected by tests.
        self._monotonic = monotonic
        self._sleep = sleep

    @property
    def pending_count(self) -> int:
        """Real-time slots our pending challenge holds (a correspondence game holds none)."""
        if self.pending is None or speed_of(self.pending.offer.time_control) == "correspondence":
            return 0
        return 1

    # --- events from the bot ------------------------------------------------------------

    def on_game_start(self, info: GameInfo) -> None:
        if info.speed != "correspondence":  # a correspondence move does not end idleness
            self._idle_since = None
        if self.pending is not None and self.pending.challenge_id == info.game_id:
            log.info("matchmaking: %s accepted our challenge", self.pending.offer.name)
            self.book.engage(info.game_id, self.pending.offer.opponent, bot=True,
                             realtime=speed_of(self.pending.offer.time_control)
                             != "correspondence")
            self.state.reset(self.pending.offer.key)
            self.pending = None

    def on_declined(self, challenge_id: str, reason_key: str | None) -> None:
        if self.pending is not None and self.pending.challenge_id == challenge_id:
            self._give_up(f"declined ({reason_key or 'no reason'})")

    def on_canceled(self, challenge_id: str) -> None:
        """The server withdrew our challenge (it expired unanswered)."""
        if self.pending is not None and self.pending.challenge_id == challenge_id:
            self._give_up("expired unanswered")

    async def yield_slot(self) -> None:
        """An incoming challenge needs the slot our pending challenge holds: cancel it."""
        if self.pending is not None and self.pending_count:
            log.info("matchmaking: cancelling our challenge to %s for an incoming one",
                     self.pending.offer.name)
            await self._withdraw()

    async def stop(self) -> None:
        """Shutdown: withdraw a pending challenge, correspondence or not."""
        await self._withdraw()

    async def _withdraw(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            await self._cancel(pending.challenge_id)

    def _give_up(self, why: str) -> None:
        assert self.pending is not None
        offer, self.pending = self.pending.offer, None
        wait_s = self.state.back_off(offer.key, self.settings.backoff_s,
                                     self.settings.max_backoff_s, time.time())
        log.info("matchmaking: challenge to %s (%s) %s; backing off %.0f s", offer.name,
                 offer.time_control, why, wait_s)

    # --- the loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Long-lived task (returns at once when matchmaking is off)."""
        if not self.settings.enabled:
            return
        while True:
            await self._sleep(TICK_S)
            now = self._monotonic()
            if self.pending is not None:
                if now - self.pending.sent_at > self.settings.challenge_timeout_s:
                    challenge_id = self.pending.challenge_id
                    self._give_up("not accepted in time")
                    await self._cancel(challenge_id)
                continue
            if not self.is_idle():
                self._idle_since = None
                continue
            if self._idle_since is None:
                self._idle_since = now
            if now - self._idle_since < self.settings.idle_s or now < self._retry_at:
                continue
            wait_s = self._wait_s()
            if wait_s > 0:
                if not self._waiting:
                    log.info("matchmaking: idle, but no challenge for %.0f s", wait_s)
                self._waiting = True
                continue
            self._waiting = False
            await self.challenge_once()

    def _wait_s(self) -> float:
        """Seconds before any challenge may be sent (our cap, a 429, the daily budget)."""
        now = time.time()
        return max(self.state.paused_until - now,
                   self.state.credits_wait_s(self.settings.daily_challenges, now), 0.0)

    async def online_bots(self) -> list[dict[str, Any]]:
        try:
            return await self.client.online_bots(ONLINE_BOTS)
        except AuthError:
            raise
        except (LichessError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.warning("matchmaking: cannot list online bots: %s", exc)
            return []

    def choose(self, bots: Sequence[Mapping[str, Any]], now: float) -> Offer | None:
        """The offer to send: combinations drawn by weight, then a suitable opponent."""
        settings = self.settings
        blocked = self.blocked() | set(settings.block_list) | set(self.config.challenge.block_list)
        recent = self.book.recent_games()
        recent_limit = self.config.challenge.max_recent_games_per_bot
        engaged = {e.opponent for e in self.book.engaged.values()}
        for time_control in weighted_order(settings.time_controls, self.rng):
            for variant in weighted_order(settings.variants, self.rng):
                if self.playable is not None and variant not in self.playable():
                    continue  # the engine does not play it: no challenge we could not play
                perf = perf_of(variant, speed_of(time_control))
                ours = self.book.our_ratings.get(perf, DEFAULT_RATING)
                low, high = ours + settings.min_rating_diff, ours + settings.max_rating_diff
                fits = []
                for bot in bots:
                    bot_id = str(bot["id"]).lower()
                    if bot_id == self.me_id or bot_id in blocked or bot_id in engaged \
                            or bot.get("title") != "BOT" or bot.get("disabled"):
                        continue
                    if recent_limit is not None and recent.get(bot_id, 0) >= recent_limit:
                        continue
                    if self.state.backed_off(f"{bot_id}|{time_control}", now) \
                            or self.state.backed_off(capped_key(bot_id), now):
                        continue
                    rating = ratings_from_account(bot).get(perf, DEFAULT_RATING)
                    if low <= rating <= high:
                        fits.append(bot)
                if not fits:
                    continue
                fewest = min(recent.get(str(b["id"]).lower(), 0) for b in fits)
                pick = self.rng.choice([b for b in fits
                                        if recent.get(str(b["id"]).lower(), 0) == fewest])
                rated = weighted_order(settings.modes, self.rng)[0] == "rated"
                color = (self.state.next_color() if settings.color == "alternate"
                         else "random")
                return Offer(str(pick["id"]).lower(), str(pick.get("username") or pick["id"]),
                             time_control, variant, rated, color)
        return None

    async def challenge_once(self) -> Offer | None:
        """Pick an opponent and send one challenge; the offer sent, or None."""
        bots = await self.online_bots()
        offer = self.choose(bots, time.time())
        if offer is None:
            log.info("matchmaking: no suitable bot online (%d online); looking again in "
                     "%.0f s", len(bots), NO_OPPONENT_WAIT_S)
            self._retry_at = self._monotonic() + NO_OPPONENT_WAIT_S
            return None
        now = time.time()
        try:
            challenge_id = await self.client.create_challenge(
                offer.opponent, offer.form(), kind=CREATE_KIND, deadline_s=REQUEST_DEADLINE_S)
        except RequestError as exc:
            key, seconds = ratelimit_of(exc.body)
            if key == BOT_DAY_KEY:
                # The cap is the opponent's, whatever the time control: skip the opponent.
                skip_s = seconds if seconds > 0 else CAPPED_OPPONENT_DEFAULT_S
                log.info("matchmaking: %s reached its daily bot games; skipping it for "
                         "%.0f s", offer.name, skip_s)
                self.state.skip_for(capped_key(offer.opponent), skip_s, now)
            else:
                wait_s = self.state.back_off(offer.key, self.settings.backoff_s,
                                             self.settings.max_backoff_s, now)
                log.info("matchmaking: challenge to %s refused (%s); backing off %.0f s",
                         offer.name, exc.message, wait_s)
            return None
        except Unavailable as exc:
            wait_s = max(self.client.blocked_for_s(CREATE_KIND), self.settings.backoff_s / 10,
                         exc.wait_s if isinstance(exc, RateLimited) else 0.0)
            key, _seconds = ratelimit_of(exc.body)
            why = "our bot games for today are used up" if key == BOT_DAY_KEY else str(exc)
            log.warning("matchmaking: cannot challenge (%s); pausing %.0f s", why, wait_s)
            self.state.pause(wait_s, why, now)
            self.book.note_refusal(exc)
            return None
        except AuthError:
            raise
        except LichessError as exc:
            log.warning("matchmaking: %s", exc)
            return None
        self.state.sent.append(now)
        self.state.save()
        self.pending = Pending(challenge_id, offer, self._monotonic())
        log.info("matchmaking: challenged %s (%s, %s, %s, %s) as %s", offer.name,
                 offer.time_control, offer.variant, "rated" if offer.rated else "casual",
                 challenge_id, offer.color)
        return offer

    async def _cancel(self, challenge_id: str) -> None:
        try:
            await self.client.cancel_challenge(challenge_id)
        except (RequestError, Unavailable) as exc:
            log.info("matchmaking: cancel %s: %s", challenge_id, exc)
