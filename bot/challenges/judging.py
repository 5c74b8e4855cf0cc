"""Judging a challenge: its terms (bot.challenges.terms), then the challenger against the
bot's situation, as pure functions over a challenge and a snapshot of the bot; and the order
the queue takes challenges in.

The situation: ratings, online block lists, how many games the bot plays against that
opponent now and played recently, and the game slots kept for people. Each decline carries
the most precise reason key Lichess offers: "later" when the same challenge may be accepted
another time, "noBot" when bots are never accepted, and "generic" where no key fits
(ratings, block lists). Bots get "later" as well once our daily bot-vs-bot games are used up.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.challenges.terms import ACCEPT, DeclineReason, Verdict, decide
from bot.lichess.events import Challenge
from bot.lichess.variants import STANDARD_RULES
from bot.ops.config import ChallengeConfig, QueueOrder

TITLE_BOT = "BOT"


@dataclass(frozen=True, slots=True)
class Situation:
    """What the rules look at besides the challenge itself (a snapshot taken by the queue)."""

    our_ratings: Mapping[str, int] = field(default_factory=dict)  # perf -> our rating
    games_with: Mapping[str, int] = field(default_factory=dict)  # opponent id -> games now
    bot_games: int = 0  # real-time games (and accepted challenges) against bots now
    recent_games: Mapping[str, int] = field(default_factory=dict)  # opponent id -> recent
    blocked: frozenset[str] = frozenset()  # user ids on the online block lists
    bot_day_capped: bool = False  # our daily bot-vs-bot games are used up


def perf_of(variant: str, speed: str) -> str:
    """The Lichess perf (rating pool) of a game: the variant's own, or its speed."""
    if variant in ("standard", "fromPosition"):
        return speed
    return variant


def rating_verdict(challenge: Challenge, policy: ChallengeConfig,
                   our_ratings: Mapping[str, int]) -> Verdict | None:
    """The rating window: absolute bounds, and the distance from our rating in that perf."""
    if policy.min_rating is None and policy.max_rating is None and policy.max_rating_diff is None:
        return None
    rating = challenge.challenger.rating
    if rating is None:
        return Verdict(DeclineReason.GENERIC, "the challenger's rating is unknown")
    if policy.min_rating is not None and rating < policy.min_rating:
        return Verdict(DeclineReason.GENERIC, f"rating {rating} < {policy.min_rating}")
    if policy.max_rating is not None and rating > policy.max_rating:
        return Verdict(DeclineReason.GENERIC, f"rating {rating} > {policy.max_rating}")
    perf = perf_of(challenge.variant, challenge.speed)
    ours = our_ratings.get(perf)
    if policy.max_rating_diff is not None and ours is not None \
            and abs(rating - ours) > policy.max_rating_diff:
        return Verdict(DeclineReason.GENERIC,
                       f"rating {rating} is more than {policy.max_rating_diff} from our "
                       f"{perf} rating {ours}")
    return None


def capacity_verdict(challenge: Challenge, policy: ChallengeConfig,
                     situation: Situation) -> Verdict | None:
    """Slots kept for people, games at once per opponent, recent games per bot."""
    who = challenge.challenger.id.lower()
    is_bot = challenge.challenger.is_bot
    realtime = challenge.time_control.kind == "clock"
    if is_bot and situation.bot_day_capped:
        return Verdict(DeclineReason.LATER, "our games against bots for today are used up")
    if is_bot and policy.reserve_for_humans > 0 and realtime:
        bot_slots = policy.concurrency - policy.reserve_for_humans
        if bot_slots <= 0:
            return Verdict(DeclineReason.NO_BOT, "every game slot is reserved for humans")
        if situation.bot_games >= bot_slots:
            return Verdict(DeclineReason.LATER,
                           f"{bot_slots} bot games already; the other slots are for humans")
    limit = policy.max_games_per_opponent
    if limit is not None and situation.games_with.get(who, 0) >= limit:
        return Verdict(DeclineReason.LATER, f"already {limit} games against {who}")
    recent_limit = policy.max_recent_games_per_bot
    if is_bot and recent_limit is not None \
            and situation.recent_games.get(who, 0) >= recent_limit:
        return Verdict(DeclineReason.LATER,
                       f"{recent_limit} games against {who} in the last "
                       f"{policy.recent_window_s:g} s")
    return None


def finer_verdict(challenge: Challenge, policy: ChallengeConfig,
                  situation: Situation) -> Verdict:
    """The finer rules alone: who the challenger is, then whether there is room for them."""
    who = challenge.challenger.id.lower()
    if who in situation.blocked:
        return Verdict(DeclineReason.GENERIC, f"{who} is on an online block list")
    return (rating_verdict(challenge, policy, situation.our_ratings)
            or capacity_verdict(challenge, policy, situation)
            or ACCEPT)


def judge(challenge: Challenge, policy: ChallengeConfig, situation: Situation,
          engine_variants: frozenset[str] = frozenset(STANDARD_RULES)) -> Verdict:
    """Every challenge rule: what is asked for (`decide`, with the variants the engine
    plays) first, then the finer rules."""
    verdict = decide(challenge, policy, engine_variants)
    if not verdict.accept:
        return verdict
    return finer_verdict(challenge, policy, situation)


def is_titled(challenge: Challenge) -> bool:
    title = challenge.challenger.title
    return title is not None and title != TITLE_BOT


def sort_queue(queue: Iterable[Challenge], order: QueueOrder) -> list[Challenge]:
    """Queued challenges in the order they are taken: "first" (as they came) or "best"
    (rated first, then titled players, then the higher rated; ties as they came)."""
    challenges = list(queue)
    if order != "best":
        return challenges
    return sorted(challenges, key=lambda c: (not c.rated, not is_titled(c),
                                             -(c.challenger.rating or 0)))
