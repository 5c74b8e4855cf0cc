"""A challenge's terms: does the config accept what it asks for (who asks, variant, clock,
mode, rules)? A pure function (`decide`) giving a Verdict: accept, or decline with
Lichess's reason key.

Who the challenger is against the bot's situation (ratings, block lists, games now) is
judged in bot.challenges.judging; whether a slot is free, in bot.challenges.slots.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.lichess.events import Challenge
from bot.lichess.variants import STANDARD_RULES
from bot.ops.config import SPEEDS, ChallengeConfig

# Rules that would leave a bot unable to abort or resign a stuck game.
REFUSED_RULES = frozenset({"noAbort"})


class DeclineReason(enum.StrEnum):
    """The reason keys `POST /api/challenge/{id}/decline` takes (sent camelCase), with the
    text lila shows the challenger (modules/challenge/src/main/Challenge.scala
    `DeclineReason`, i18n `challenge.decline*`); each is used for that meaning only:

    generic      "I'm not accepting challenges at the moment."
    later        "This is not the right time for me, please ask again later."
    tooFast      "This time control is too fast for me, please challenge again with a
                 slower game."
    tooSlow      "This time control is too slow for me, please challenge again with a
                 faster game."
    timeControl  "I'm not accepting challenges with this time control."
    rated        "Please send me a rated challenge instead."
    casual       "Please send me a casual challenge instead."
    standard     "I'm not accepting variant challenges right now." (send standard chess)
    variant      "I'm not willing to play this variant right now."
    noBot        "I'm not accepting challenges from bots."
    onlyBot      "I'm only accepting challenges from bots."
    """

    GENERIC = "generic"
    LATER = "later"
    TOO_FAST = "tooFast"
    TOO_SLOW = "tooSlow"
    TIME_CONTROL = "timeControl"
    RATED = "rated"
    CASUAL = "casual"
    STANDARD = "standard"
    VARIANT = "variant"
    NO_BOT = "noBot"
    ONLY_BOT = "onlyBot"


@dataclass(frozen=True, slots=True)
class Verdict:
    """Accept (reason None), or decline with a reason key and a log-friendly explanation."""

    reason: DeclineReason | None
    why: str

    @property
    def accept(self) -> bool:
        return self.reason is None


ACCEPT = Verdict(None, "matches the challenge rules")


def is_own_challenge(challenge: Challenge, me: str) -> bool:
    """Our own outgoing challenges arrive on our event stream too."""
    return challenge.challenger.id.lower() == me.lower()


def _speed_verdict(challenge: Challenge, policy: ChallengeConfig) -> Verdict | None:
    if challenge.speed in policy.speeds:
        return None
    # SPEEDS runs fastest first: a refused speed is "too fast" or "too slow" by it.
    allowed = [SPEEDS.index(s) for s in policy.speeds if s in SPEEDS]
    if challenge.speed in SPEEDS and allowed:
        rank = SPEEDS.index(challenge.speed)
        if challenge.speed == "correspondence":
            return Verdict(DeclineReason.TIME_CONTROL, "correspondence is not accepted")
        if rank < min(allowed):
            return Verdict(DeclineReason.TOO_FAST, f"speed {challenge.speed} is too fast")
        if rank > max(allowed):
            return Verdict(DeclineReason.TOO_SLOW, f"speed {challenge.speed} is too slow")
    return Verdict(DeclineReason.TIME_CONTROL, f"speed {challenge.speed} is not accepted")


def _clock_verdict(challenge: Challenge, policy: ChallengeConfig) -> Verdict | None:
    tc = challenge.time_control
    if tc.kind != "clock":
        if tc.kind == "correspondence" and "correspondence" in policy.speeds:
            return None
        return Verdict(DeclineReason.TIME_CONTROL, f"{tc.kind} games are not accepted")
    if tc.base_s < policy.min_base_s:
        return Verdict(DeclineReason.TOO_FAST, f"base {tc.base_s:g} s < {policy.min_base_s:g} s")
    if tc.base_s > policy.max_base_s:
        return Verdict(DeclineReason.TOO_SLOW, f"base {tc.base_s:g} s > {policy.max_base_s:g} s")
    if tc.increment_s < policy.min_increment_s:
        return Verdict(DeclineReason.TOO_FAST,
                       f"increment {tc.increment_s:g} s < {policy.min_increment_s:g} s")
    if tc.increment_s > policy.max_increment_s:
        return Verdict(DeclineReason.TOO_SLOW,
                       f"increment {tc.increment_s:g} s > {policy.max_increment_s:g} s")
    return None


def decide(challenge: Challenge, policy: ChallengeConfig,
           engine_variants: frozenset[str] = frozenset(STANDARD_RULES)) -> Verdict:
    """Whether the config's rules accept this challenge, and the reason key if not;
    `engine_variants`: the variants the configured engine plays (declared by its
    `UCI_Variant` option), so a game it cannot play is declined before it is accepted.

    Checks go from who is asking to what they ask for, so the reason given is the one the
    challenger can act on first.
    """
    who = challenge.challenger.id.lower()
    if who in policy.block_list:
        return Verdict(DeclineReason.GENERIC, f"{who} is on the block list")
    if policy.allow_list and who not in policy.allow_list:
        return Verdict(DeclineReason.GENERIC, f"{who} is not on the allow list")
    if challenge.challenger.is_bot and not policy.accept_bots:
        return Verdict(DeclineReason.NO_BOT, "bots are not accepted")
    if not challenge.challenger.is_bot and not policy.accept_humans:
        return Verdict(DeclineReason.ONLY_BOT, "humans are not accepted")
    if not challenge.bot_compatible:
        return Verdict(DeclineReason.TIME_CONTROL, "Lichess says the Bot API cannot play it")
    if challenge.variant not in policy.variants:
        if tuple(policy.variants) == ("standard",):
            # lila's `standard`: "I'm not accepting variant challenges right now".
            return Verdict(DeclineReason.STANDARD,
                           f"variant {challenge.variant}: only standard chess is accepted")
        # lila's `variant`: "I'm not willing to play this variant right now" (standard too).
        return Verdict(DeclineReason.VARIANT, f"variant {challenge.variant} is not accepted")
    if challenge.variant not in engine_variants:
        return Verdict(DeclineReason.VARIANT, f"the engine does not play {challenge.variant}")
    verdict = _speed_verdict(challenge, policy) or _clock_verdict(challenge, policy)
    if verdict is not None:
        return verdict
    if challenge.rated and not policy.accept_rated:
        return Verdict(DeclineReason.CASUAL, "rated games are not accepted")
    if not challenge.rated and not policy.accept_casual:
        return Verdict(DeclineReason.RATED, "casual games are not accepted")
    refused = REFUSED_RULES.intersection(challenge.rules)
    if refused:
        return Verdict(DeclineReason.GENERIC, f"rule {sorted(refused)[0]} is not accepted")
    return ACCEPT
