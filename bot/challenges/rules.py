"""Challenge policy: accept or decline (with Lichess's reason key), as pure functions.

Concurrency is not decided here: a challenge the rules allow is queued by the app while all
game slots are busy and taken in order when one frees.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.lichess.events import Challenge
from bot.lichess.variants import STANDARD_RULES
from bot.ops.config import ChallengeConfig

# Lichess speed categories, fastest first: a refused speed is "too fast" or "too slow" by this.
SPEED_ORDER = ("ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence")
# Rules that would leave a bot unable to abort or resign a stuck game.
REFUSED_RULES = frozenset({"noAbort"})


class DeclineReason(enum.StrEnum):
    """The reason keys `POST /api/challenge/{id}/decline` takes (sent camelCase)."""

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
    allowed = [SPEED_ORDER.index(s) for s in policy.speeds if s in SPEED_ORDER]
    if challenge.speed in SPEED_ORDER and allowed:
        rank = SPEED_ORDER.index(challenge.speed)
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
        if challenge.variant == "standard":
            return Verdict(DeclineReason.STANDARD, "standard chess is not accepted")
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
