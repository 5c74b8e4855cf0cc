"""Challenges and challenge policies for the rules tests: an ordinary one, with changes."""

from __future__ import annotations

import dataclasses
from typing import Any

from bot.lichess.events import Challenge, ChallengeUser, TimeControl
from bot.ops.config import ChallengeConfig

ALICE = ChallengeUser("alice", "Alice", None, 1500)


def challenge(who: ChallengeUser = ALICE, **changes: Any) -> Challenge:
    """A casual 3+2 standard challenge from `who`, with `changes` applied."""
    base = Challenge(
        id="abcd1234", challenger=who, dest=None, variant="standard", speed="blitz",
        rated=False, time_control=TimeControl("clock", 180.0, 2.0), color="random",
        initial_fen=None, rules=(), rematch_of=None, bot_compatible=True,
    )
    return dataclasses.replace(base, **changes)


def policy(**changes: Any) -> ChallengeConfig:
    """The default challenge policy with `changes` applied."""
    return dataclasses.replace(ChallengeConfig(), **changes)
