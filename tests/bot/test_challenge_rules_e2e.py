"""Every challenge rule end to end on the sandbox: the running bot accepts what its config
allows and declines the rest with the most precise reason key, as the challenger sees it."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sandbox.challenges import Challenge
from sandbox.server import SandboxServer
from tests.bot.e2e_support import BOT, make_config, quiet_logs, running_bot, wait_for


@dataclass(frozen=True)
class Ask:
    """One challenge to the bot: who sends it, what it asks for, and the answer expected
    ("accepted", or the decline reason key)."""

    challenger: str
    expect: str
    bot: bool = False
    rating: int | None = None  # the challenger's rating in the game's perf
    clock: tuple[int | None, int | None] = (180, 2)
    days: int | None = None
    variant: str = "standard"
    rated: bool = False


@dataclass(frozen=True)
class Case:
    rules: dict[str, Any]
    asks: tuple[Ask, ...]
    state: dict[str, Any] = field(default_factory=dict)  # opponents.json to start from


HOUR_AGO = time.time() - 3600
CASES = {
    "no bots": Case({"accept_bots": False}, (
        Ask("robo", "noBot", bot=True), Ask("person", "accepted"))),
    "only bots": Case({"accept_humans": False}, (
        Ask("person", "onlyBot"), Ask("robo", "accepted", bot=True))),
    "speeds": Case({"speeds": ("blitz", "rapid")}, (
        Ask("bulleter", "tooFast", clock=(60, 0)), Ask("slowpoke", "tooSlow", clock=(3600, 0)),
        Ask("penpal", "timeControl", clock=(None, None), days=3),
        Ask("blitzer", "accepted"))),
    "clock bounds": Case({"min_base_s": 120, "max_increment_s": 10}, (
        Ask("hasty", "tooFast", clock=(60, 1)), Ask("patient", "tooSlow", clock=(300, 20)),
        Ask("steady", "accepted", clock=(300, 10)))),
    "casual only": Case({"accept_rated": False}, (
        Ask("ranked", "casual", rated=True), Ask("friendly", "accepted"))),
    "rated only": Case({"accept_casual": False}, (
        Ask("friendly", "rated"), Ask("ranked", "accepted", rated=True))),
    # lila's `standard` means "I'm not accepting variant challenges right now", `variant`
    # "I'm not willing to play this variant right now" (Challenge.scala DeclineReason).
    "chess960 only": Case({"variants": ("chess960",)}, (
        Ask("classic", "variant"), Ask("fischer", "accepted", variant="chess960"))),
    "standard only": Case({"variants": ("standard",)}, (
        Ask("fischer", "standard", variant="chess960"), Ask("classic", "accepted"))),
    "some variants": Case({"variants": ("standard", "fromPosition")}, (
        Ask("fischer", "variant", variant="chess960"), Ask("classic", "accepted"))),
    "lists": Case({"block_list": ("pest",), "allow_list": ("friend", "pest")}, (
        Ask("pest", "generic"), Ask("stranger", "generic"), Ask("friend", "accepted"))),
    "rating bounds": Case({"min_rating": 1400, "max_rating": 2000}, (
        Ask("novice", "generic", rating=1300), Ask("master", "generic", rating=2100),
        Ask("club", "accepted", rating=1700))),
    # Our blitz rating on the sandbox is its initial 1500.
    "rating distance": Case({"max_rating_diff": 200}, (
        Ask("shark", "generic", rating=1750), Ask("peer", "accepted", rating=1650))),
    "all slots for humans": Case({"reserve_for_humans": 4}, (
        Ask("robo", "noBot", bot=True), Ask("person", "accepted"))),
    "recent games per bot": Case({"max_recent_games_per_bot": 1}, (
        Ask("regular", "later", bot=True), Ask("newcomer", "accepted", bot=True)),
        state={"games": {"old00001": ["regular", HOUR_AGO]}, "bots": ["regular"]}),
    "our bot games used up": Case({}, (
        Ask("robo", "later", bot=True), Ask("person", "accepted")),
        state={"bots_capped_until": time.time() + 3600}),
}


def answered(challenge: Challenge) -> str | None:
    """What the challenger saw: "accepted", the decline key, or None while pending."""
    if challenge.status == "accepted":
        return "accepted"
    if challenge.status == "declined":
        return challenge.decline_key
    return None


@pytest.mark.parametrize("name", CASES)
async def test_each_rule_accepts_or_declines_with_its_reason(name: str, tmp_path: Path) -> None:
    quiet_logs()
    case = CASES[name]
    if case.state:
        (tmp_path / "state").mkdir(parents=True)
        (tmp_path / "state" / "opponents.json").write_text(json.dumps(case.state))
    config = make_config(tmp_path, concurrency=4)
    rules = {"speeds": ("bullet", "blitz", "rapid", "classical", "correspondence"),
             **case.rules}
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, **rules))
    async with SandboxServer(keepalive_s=0.5) as server:
        for ask in case.asks:
            server.add_account(ask.challenger, bot=ask.bot)
            account = server.account(ask.challenger)
            if ask.rating is not None:
                for perf in ("blitz", "rapid", "bullet", "classical", "chess960"):
                    account.perf(perf).rating = ask.rating
        async with running_bot(server, config):
            ids = []
            for ask in case.asks:
                limit, increment = ask.clock
                ids.append(await server.challenge(
                    ask.challenger, BOT, limit, increment, days=ask.days, variant=ask.variant,
                    rated=ask.rated, color="white"))
            challenges = [server.lobby.challenges[i] for i in ids]
            await wait_for(lambda: all(answered(c) is not None for c in challenges))
            seen = {ask.challenger: answered(c) for ask, c in zip(case.asks, challenges,
                                                                 strict=True)}
            for challenge in challenges:  # the games that started end at once
                if challenge.status == "accepted":
                    server.end_game(challenge.id, "draw")
    expected = {ask.challenger: ask.expect.lower() for ask in case.asks}
    assert {who: (key or "").lower() for who, key in seen.items()} == expected


async def test_best_first_takes_rated_then_titled_challenges_first(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One slot, taken: three challenges wait. With sort "best" the rated one is taken when
    the slot frees, although it came last."""
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot")
    config = make_config(tmp_path, concurrency=1)
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, sort="best"))
    async with SandboxServer(keepalive_s=0.5) as server:
        for name in ("first", "casual1", "casual2", "ranked"):
            server.add_account(name, bot=False)
        async with running_bot(server, config):
            busy = await server.challenge("first", BOT, 600, 0, color="white")
            await wait_for(lambda: server.lobby.challenges[busy].status == "accepted")
            waiting = [await server.challenge(name, BOT, 600, 0, rated=name == "ranked",
                                              color="white")
                       for name in ("casual1", "casual2", "ranked")]
            # all three are queued behind the busy slot
            await wait_for(lambda: all(
                any(m.startswith(f"challenge {c} from ") and m.endswith(": queued")
                    for m in caplog.messages) for c in waiting))
            assert all(server.lobby.challenges[c].status == "created" for c in waiting)
            server.end_game(busy, "draw")
            await wait_for(lambda: any(server.lobby.challenges[c].status == "accepted"
                                       for c in waiting))
            statuses = [server.lobby.challenges[c].status for c in waiting]
            assert statuses == ["created", "created", "accepted"]
            server.end_game(waiting[2], "draw")
