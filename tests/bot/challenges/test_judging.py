"""The finer challenge rules as pure functions: every rule's accept and decline, with the
reason key it sends, and the order queued challenges are taken in; and one rule checked
again by the running bot when a queued challenge's turn comes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from bot.challenges.judging import (
    Situation,
    capacity_verdict,
    finer_verdict,
    judge,
    perf_of,
    rating_verdict,
    sort_queue,
)
from bot.challenges.opponents import OpponentBook
from bot.challenges.terms import DeclineReason
from bot.lichess.client import RateLimited, RequestError, Unavailable
from bot.lichess.events import ChallengeUser, TimeControl
from bot.ops.config import ChallengeConfig
from sandbox.server import SandboxServer
from tests.bot.challenges.builders import ALICE, challenge, policy
from tests.bot.e2e_support import BOT, GUARD_S, make_config, quiet_logs, running_bot

ROBOT = ChallengeUser("robot", "Robot", "BOT", 1500)


def rated(name: str, rating: int | None, title: str | None = None) -> ChallengeUser:
    return ChallengeUser(name.lower(), name, title, rating)


def test_perf_of_a_game() -> None:
    assert perf_of("standard", "blitz") == "blitz"
    assert perf_of("fromPosition", "rapid") == "rapid"
    assert perf_of("chess960", "blitz") == "chess960"
    assert perf_of("atomic", "bullet") == "atomic"


def test_the_defaults_accept_everyone_in_any_situation() -> None:
    busy = Situation(games_with={"alice": 5, "robot": 5}, bot_games=9,
                     recent_games={"alice": 99, "robot": 99})
    for who in (ALICE, ROBOT, rated("Nobody", None)):
        assert finer_verdict(challenge(who), ChallengeConfig(), busy).accept


@pytest.mark.parametrize(("who", "rules", "situation", "reason", "why"), [
    # The rating window: absolute bounds, and the distance from our rating in that perf.
    (rated("Low", 1199), {"min_rating": 1200}, Situation(), DeclineReason.GENERIC, "< 1200"),
    (rated("High", 2001), {"max_rating": 2000}, Situation(), DeclineReason.GENERIC, "> 2000"),
    (rated("Anon", None), {"min_rating": 1200}, Situation(), DeclineReason.GENERIC, "unknown"),
    (rated("Far", 1901), {"max_rating_diff": 400}, Situation(our_ratings={"blitz": 1500}),
     DeclineReason.GENERIC, "more than 400 from our blitz rating 1500"),
    (rated("Below", 1099), {"max_rating_diff": 400}, Situation(our_ratings={"blitz": 1500}),
     DeclineReason.GENERIC, "more than 400"),
    # Slots for people: bots get "later" while their share is taken, "noBot" if it is none.
    (ROBOT, {"concurrency": 3, "reserve_for_humans": 1}, Situation(bot_games=2),
     DeclineReason.LATER, "slots are for humans"),
    (ROBOT, {"concurrency": 2, "reserve_for_humans": 2}, Situation(),
     DeclineReason.NO_BOT, "reserved for humans"),
    # Games at once against one opponent, and recent games against one bot.
    (ALICE, {"max_games_per_opponent": 2}, Situation(games_with={"alice": 2}),
     DeclineReason.LATER, "already 2 games against alice"),
    (ROBOT, {"max_recent_games_per_bot": 3}, Situation(recent_games={"robot": 3}),
     DeclineReason.LATER, "3 games against robot"),
    # Online block lists.
    (ALICE, {}, Situation(blocked=frozenset({"alice"})), DeclineReason.GENERIC,
     "online block list"),
    # Our daily bot-vs-bot games are used up.
    (ROBOT, {}, Situation(bot_day_capped=True), DeclineReason.LATER, "for today"),
])
def test_each_finer_rule_declines_with_the_most_precise_reason(
        who: ChallengeUser, rules: dict[str, Any], situation: Situation,
        reason: DeclineReason, why: str) -> None:
    verdict = finer_verdict(challenge(who), policy(**rules), situation)
    assert verdict.reason is reason
    assert why in verdict.why


@pytest.mark.parametrize(("who", "rules", "situation"), [
    (rated("Low", 1200), {"min_rating": 1200}, Situation()),
    (rated("High", 2000), {"max_rating": 2000}, Situation()),
    (rated("Near", 1900), {"max_rating_diff": 400}, Situation(our_ratings={"blitz": 1500})),
    # Our rating in another perf does not count; an unknown rating of ours skips the check.
    (rated("Far", 2400), {"max_rating_diff": 400}, Situation(our_ratings={"bullet": 1500})),
    (ROBOT, {"concurrency": 3, "reserve_for_humans": 1}, Situation(bot_games=1)),
    # People may take the reserved slots, and so may bots in correspondence games.
    (ALICE, {"concurrency": 2, "reserve_for_humans": 2}, Situation(bot_games=2)),
    (ALICE, {"max_games_per_opponent": 2}, Situation(games_with={"alice": 1, "bob": 5})),
    # The recent-games limit is for bots only.
    (ROBOT, {"max_recent_games_per_bot": 3}, Situation(recent_games={"robot": 2})),
    (ALICE, {"max_recent_games_per_bot": 3}, Situation(recent_games={"alice": 30})),
    (ALICE, {}, Situation(blocked=frozenset({"bob"}))),
    (ALICE, {}, Situation(bot_day_capped=True)),
])
def test_each_finer_rule_accepts_within_its_bounds(
        who: ChallengeUser, rules: dict[str, Any], situation: Situation) -> None:
    assert finer_verdict(challenge(who), policy(**rules), situation).accept


def test_correspondence_bots_do_not_use_up_the_reserved_slots() -> None:
    corr = challenge(ROBOT, speed="correspondence",
                     time_control=TimeControl("correspondence", days_per_turn=3))
    rules = policy(concurrency=2, reserve_for_humans=2)
    assert capacity_verdict(corr, rules, Situation(bot_games=5)) is None


def test_rating_window_uses_the_variant_perf() -> None:
    c = challenge(rated("Fischer", 1800), variant="chess960")
    ours = {"blitz": 1800, "chess960": 1300}
    verdict = rating_verdict(c, policy(max_rating_diff=300), ours)
    assert verdict is not None and "chess960 rating 1300" in verdict.why


def test_judge_gives_the_basic_rules_precedence() -> None:
    """What is asked for is judged first, so the challenger learns what to change."""
    c = challenge(rated("Low", 800), variant="atomic")
    verdict = judge(c, policy(min_rating=1000), Situation())
    assert verdict.reason is DeclineReason.VARIANT
    verdict = judge(challenge(rated("Low", 800)), policy(min_rating=1000), Situation())
    assert verdict.reason is DeclineReason.GENERIC
    assert judge(challenge(), ChallengeConfig(), Situation()).accept


def test_queue_orders() -> None:
    casual_gm = challenge(rated("Gm", 2500, "GM"), id="c1", rated=False)
    rated_low = challenge(rated("Low", 1200), id="c2", rated=True)
    rated_im = challenge(rated("Im", 2300, "IM"), id="c3", rated=True)
    rated_bot = challenge(rated("Bot", 2900, "BOT"), id="c4", rated=True)
    rated_high = challenge(rated("High", 1900), id="c5", rated=True)
    queue = [casual_gm, rated_low, rated_im, rated_bot, rated_high]
    assert sort_queue(queue, "first") == queue
    # Rated first; among them the titled (BOT is no title here); then by rating.
    assert [c.id for c in sort_queue(queue, "best")] == ["c3", "c4", "c5", "c2", "c1"]
    twins = [challenge(id="t1"), challenge(id="t2")]
    assert [c.id for c in sort_queue(twins, "best")] == ["t1", "t2"]


def test_the_book_counts_games_per_opponent_and_remembers_history(tmp_path: Path) -> None:
    book = OpponentBook(tmp_path, recent_window_s=3600)
    book.engage("g1", "Robot", bot=True)
    book.engage("g2", "robot")  # known to be a bot by now
    book.engage("g3", "alice")
    book.engage("c4", "carol", started=False)  # an accepted challenge counts as well
    book.engage("g5", "robot", realtime=False)  # correspondence: no real-time slot
    situation = book.situation(frozenset({"x"}))
    assert situation.games_with == {"robot": 3, "alice": 1, "carol": 1}
    assert situation.bot_games == 2
    assert situation.recent_games == {"robot": 3, "alice": 1}
    assert situation.blocked == {"x"}
    book.release("g1")
    book.engage("g2", "robot")  # re-sent after a reconnect: counted once
    assert book.situation().games_with["robot"] == 2
    again = OpponentBook(tmp_path, recent_window_s=3600)
    assert again.recent_games() == {"robot": 3, "alice": 1}
    assert "robot" in again.known_bots
    assert again.situation().games_with == {}  # engagements are rebuilt from the server


async def test_the_running_bot_declines_a_second_game_against_the_same_opponent(
        tmp_path: Path) -> None:
    """Through the bot: both challenges pass on arrival, the second is declined "later"
    when its turn comes, because the first one's game now counts."""
    quiet_logs()
    config = make_config(tmp_path, concurrency=2)
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, max_games_per_opponent=1))
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_account("twice", bot=False)
        async with running_bot(server, config):
            first = await server.challenge("twice", BOT, 60, 0)
            second = await server.challenge("twice", BOT, 60, 0)
            game_id = await server.wait_for_game("twice", timeout_s=GUARD_S)
            declined = server.lobby.challenges[second]
            async with asyncio.timeout(GUARD_S):
                while declined.status == "created":  # noqa: ASYNC110 - sandbox state
                    await asyncio.sleep(0.05)
            assert game_id == first
            assert (declined.status, declined.decline_key) == ("declined", "later")
            server.end_game(game_id, "draw")


def test_the_book_remembers_when_our_bot_games_are_used_up(tmp_path: Path) -> None:
    book = OpponentBook(tmp_path, recent_window_s=3600)
    body = json.dumps({"error": "You played 100 games against other bots today",
                       "ratelimit": {"key": "bot.vsBot.day", "seconds": 7200}})
    book.note_refusal(RequestError(400, "no", "/api/challenge/x/accept",
                                   '{"error": "This challenge is canceled"}'))
    book.note_refusal(Unavailable("429", json.dumps({"ratelimit": {
        "key": "challenge.create.user", "seconds": 50}})))
    assert not book.situation().bot_day_capped
    book.note_refusal(RequestError(400, "no", "/api/challenge/x/accept", body))
    assert not book.situation().bot_day_capped  # a 400 is the challenger's cap, not ours
    book.note_refusal(RateLimited("429", body, "bot.vsBot.day", 7200))
    assert book.situation().bot_day_capped
    again = OpponentBook(tmp_path, recent_window_s=3600)
    assert again.situation().bot_day_capped
    assert 7100 < again.bots_capped_until - time.time() <= 7200
