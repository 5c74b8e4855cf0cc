"""Matchmaking's parts: time controls, weighted draws, the remembered back-off, pauses and
budget, colour alternation, and the choice of opponent."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.challenges.matchmaking import (
    STATE_FILE,
    Matchmaker,
    MatchState,
    Offer,
    capped_key,
    speed_of,
    weighted_order,
)
from bot.challenges.opponents import OpponentBook, ratelimit_of
from bot.lichess.client import Lichess
from bot.ops.config import Config, ConfigError, MatchmakingConfig, parse_config, parse_time_control
from tests.bot.e2e_support import GUARD_S
from tests.bot.stepped_time import SteppedTime


@pytest.mark.parametrize(("text", "parsed"), [
    ("3+2", (180, 2, None)), ("0.5+0", (30, 0, None)), ("1.5+1", (90, 1, None)),
    ("180+60", (10800, 60, None)), ("0+1", (0, 1, None)), ("2d", (0, 0, 2)),
    (" 14d ", (0, 0, 14)),
])
def test_time_controls(text: str, parsed: tuple[int, int, int | None]) -> None:
    assert parse_time_control(text) == parsed


@pytest.mark.parametrize(("text", "problem"), [
    ("0.25+0", "UltraBullet"), ("0+0", "UltraBullet"), ("1.1+0", "<minutes>+<increment>"),
    ("3+61", "<minutes>+<increment>"), ("181+0", "<minutes>+<increment>"),
    ("3", "<minutes>+<increment>"), ("blitz", "<minutes>+<increment>"), ("4d", "days per move"),
    ("xd", "days per move"),
])
def test_bad_time_controls(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_time_control(text)


def test_speeds() -> None:
    assert [speed_of(tc) for tc in ("0.5+0", "1+0", "3+0", "3+2", "8+0", "25+0", "30+20",
                                    "3d")] == [
        "bullet", "bullet", "blitz", "blitz", "rapid", "classical", "classical",
        "correspondence"]


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("""
matchmaking:
  time_controls: {"3+2": 1, "0.25+0": 1}
  variants: {fromPosition: 1}
  modes: {rated: 0, casual: 0}
  min_rating_diff: 100
  max_rating_diff: -100
  daily_challenges: 500
correspondence: {checkin_interval_s: 1}
challenge: {online_block_lists: [ftp://x], sort: worst, min_rating: 2000, max_rating: 1000}
""", "my.yml")
    problems = "\n".join(caught.value.problems)
    for expected in ("matchmaking.time_controls: time control '0.25+0' is UltraBullet",
                     "matchmaking.variants: keys must be one of standard, chess960, antichess",
                     "matchmaking.modes: needs at least one weight above 0",
                     "matchmaking.min_rating_diff: must not be greater than",
                     "matchmaking.daily_challenges: must be a number of challenges",
                     "correspondence.checkin_interval_s: must be a number of seconds >= 10",
                     "challenge.online_block_lists: must be an http:// or https:// URL",
                     "challenge.sort: must be one of first, best",
                     "challenge.min_rating: must not be greater than challenge.max_rating"):
        assert expected in problems


def test_weighted_order() -> None:
    rng = random.Random(7)
    weights = {"a": 3.0, "b": 1.0, "never": 0.0}
    firsts = Counter(weighted_order(weights, rng)[0] for _ in range(2000))
    assert set(firsts) == {"a", "b"}
    assert 0.70 < firsts["a"] / 2000 < 0.80  # 3 : 1
    assert sorted(weighted_order(weights, rng)) == ["a", "b"]


def test_ratelimit_of_a_body() -> None:
    body = json.dumps({"error": "You played 100 games", "ratelimit": {
        "key": "bot.vsBot.day", "seconds": 86398}})
    assert ratelimit_of(body) == ("bot.vsBot.day", 86398.0)
    assert ratelimit_of('{"error": "No such user"}') == (None, 0.0)
    assert ratelimit_of("<html>429</html>") == (None, 0.0)


def test_offer_forms() -> None:
    clock = Offer("rival", "Rival", "3+2", "chess960", True, "white")
    assert clock.form() == {"rated": "true", "color": "white", "variant": "chess960",
                            "clock.limit": "180", "clock.increment": "2"}
    corr = Offer("rival", "Rival", "3d", "standard", False, "random")
    assert corr.form() == {"rated": "false", "color": "random", "variant": "standard",
                           "days": "3"}
    assert clock.key == "rival|3+2"


def test_match_state_backs_off_pauses_and_persists(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    state = MatchState(path)
    now = time.time()
    waits = [state.back_off("rival|3+2", 600, 3000, now) for _ in range(5)]
    assert waits == [600, 1200, 2400, 3000, 3000]
    assert state.backed_off("rival|3+2", now + 2999)
    assert not state.backed_off("rival|5+3", now)
    state.skip_for("capped|3+2", 86398, now)
    state.pause(3600, "our daily cap", now)
    assert [state.next_color() for _ in range(3)] == ["white", "black", "white"]
    state.sent = [now - 90000, now - 100, now - 50]  # the first is older than a day
    state.save()
    again = MatchState(path)
    until, level = again.backoff["rival|3+2"]
    assert (round(until - now), level) == (3000, 5)
    until, level = again.backoff["capped|3+2"]
    assert (round(until - now), level) == (86398, 0)
    assert again.paused_until == pytest.approx(now + 3600)
    assert again.pause_reason == "our daily cap"
    assert again.next_color() == "black"  # alternation goes on after a restart
    assert again.credits_wait_s(3, now) == 0
    assert again.credits_wait_s(2, now) == pytest.approx(86300)
    again.reset("rival|3+2")
    assert not MatchState(path).backed_off("rival|3+2", now)


def test_a_damaged_state_file_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    for text in ("{not json", "[1, 2]", '{"backoff": 5, "sent": "x", "last_color": 3}'):
        path.write_text(text)
        state = MatchState(path)
        assert state.backoff == {} and state.sent == [] and state.paused_until == 0


def bot(name: str, rating: int | None = 1500, *, perf: str = "blitz",
        title: str | None = "BOT", **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": name.lower(), "username": name, **extra}
    if title is not None:
        entry["title"] = title
    if rating is not None:
        entry["perfs"] = {perf: {"rating": rating, "games": 50}}
    return entry


def offer_to(mm: Matchmaker, bots: list[dict[str, Any]], now: float) -> Offer:
    """The offer ``mm`` chooses among ``bots``, which there must be."""
    offer = mm.choose(bots, now)
    assert offer is not None
    return offer


@pytest.fixture
async def client() -> AsyncIterator[Lichess]:
    lichess = Lichess("http://127.0.0.1:9", "token")
    yield lichess
    await lichess.close()


def matchmaker(tmp_path: Path, client: Lichess, *, blocked: frozenset[str] = frozenset(),
               is_idle: Callable[[], bool] = lambda: True, stepped: SteppedTime | None = None,
               **settings: Any) -> Matchmaker:
    base = MatchmakingConfig(enabled=True, time_controls={"3+2": 1.0},
                             variants={"standard": 1.0}, modes={"rated": 1.0})
    config = dataclasses.replace(Config(), state_dir=tmp_path,
                                 matchmaking=dataclasses.replace(base, **settings))
    book = OpponentBook(tmp_path, recent_window_s=86400)
    book.our_ratings = {"blitz": 1600, "chess960": 1400}
    if stepped is None:
        return Matchmaker(config, client, "Kibitz", book, is_idle=is_idle,
                          blocked=lambda: blocked, rng=random.Random(1))
    return Matchmaker(config, client, "Kibitz", book, is_idle=is_idle,
                      blocked=lambda: blocked, rng=random.Random(1),
                      monotonic=stepped.now, sleep=stepped.sleep)


async def test_the_idle_timer_wants_idle_s_of_unbroken_idleness(
        tmp_path: Path, client: Lichess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Busy until 1 s and for one look at 2 s: idleness counts from 2.25 s, so the one
    challenge goes out at 2.25 + 2 s (the matchmaker looks every TICK_S = 0.25 s)."""
    stepped = SteppedTime(until_s=60.0)
    busy_at_s = {0.25, 0.5, 0.75, 2.0}
    mm = matchmaker(tmp_path, client, idle_s=2.0, stepped=stepped,
                    is_idle=lambda: stepped.now() not in busy_at_s)
    sent_at_s: list[float] = []
    sent = asyncio.Event()

    async def challenge_once() -> None:
        sent_at_s.append(stepped.now())
        sent.set()
        await asyncio.Event().wait()  # the test ends the run here

    monkeypatch.setattr(mm, "challenge_once", challenge_once)
    task = asyncio.create_task(mm.run())
    await asyncio.wait_for(sent.wait(), GUARD_S)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sent_at_s == [4.25]


async def test_choose_keeps_to_the_rating_window_and_skips_who_it_must(
        tmp_path: Path, client: Lichess) -> None:
    mm = matchmaker(tmp_path, client, blocked=frozenset({"listed"}),
                    block_list=("shunned",), min_rating_diff=-100, max_rating_diff=200)
    now = time.time()
    mm.state.back_off("tired|3+2", 600, 600, now)
    online = [
        bot("Kibitz"), bot("Human", title=None), bot("Gm", title="GM"), bot("Listed"),
        bot("Shunned"), bot("Tired"), bot("Weak", 1499), bot("Strong", 1801),
        bot("Closed", disabled=True), bot("Right", 1800), bot("Fine", 1500),
    ]
    picks = {offer_to(mm, online, now).opponent for _ in range(40)}
    assert picks == {"right", "fine"}
    offer = mm.choose([bot("Right", 1800)], now)
    assert offer is not None
    assert (offer.time_control, offer.variant, offer.rated) == ("3+2", "standard", True)
    # An unplayed perf counts as 1500 (within -100..+200 of our 1600 here).
    assert mm.choose([bot("Newcomer", None)], now) is not None
    assert mm.choose([bot("Weak", 1499), bot("Tired")], now) is None


async def test_an_opponent_at_its_daily_cap_is_skipped_in_every_time_control(
        tmp_path: Path, client: Lichess) -> None:
    mm = matchmaker(tmp_path, client, time_controls={"3+2": 1.0, "5+3": 1.0, "1+0": 1.0})
    now = time.time()
    mm.state.skip_for(capped_key("Capped"), 3600, now)
    picks = {offer_to(mm, [bot("Capped"), bot("Fresh")], now).opponent
             for _ in range(30)}
    assert picks == {"fresh"}
    assert mm.choose([bot("Capped")], now) is None
    assert mm.choose([bot("Capped")], now + 3601) is not None


async def test_choose_prefers_opponents_played_least_lately(tmp_path: Path,
                                                            client: Lichess) -> None:
    mm = matchmaker(tmp_path, client)
    mm.book.engage("g1", "often", bot=True)
    mm.book.release("g1")
    online = [bot("Often"), bot("Seldom")]
    assert {offer_to(mm, online, time.time()).opponent
            for _ in range(20)} == {"seldom"}
    limited = dataclasses.replace(mm.config, challenge=dataclasses.replace(
        mm.config.challenge, max_recent_games_per_bot=1))
    mm.config = limited
    assert mm.choose([bot("Often")], time.time()) is None


async def test_choose_uses_the_perf_of_the_drawn_variant(tmp_path: Path,
                                                         client: Lichess) -> None:
    mm = matchmaker(tmp_path, client, variants={"chess960": 1.0}, min_rating_diff=-50,
                    max_rating_diff=50)
    # Our chess960 rating is 1400: a 1400 in chess960 fits, a 1600 in blitz does not.
    offer = mm.choose([bot("Blitzer", 1600), bot("Fischer", 1400, perf="chess960")],
                      time.time())
    assert offer is not None and offer.opponent == "fischer" and offer.variant == "chess960"


async def test_colours_alternate(tmp_path: Path, client: Lichess) -> None:
    mm = matchmaker(tmp_path, client)
    colors = [offer_to(mm, [bot("Rival")], time.time()).color
              for _ in range(4)]
    assert colors == ["white", "black", "white", "black"]
    mm_random = matchmaker(tmp_path / "other", client, color="random")
    assert offer_to(mm_random, [bot("Rival")], time.time()).color == "random"


async def test_variants_the_engine_does_not_play_are_never_offered(
        tmp_path: Path, client: Lichess) -> None:
    mm = matchmaker(tmp_path, client, variants={"atomic": 5.0, "crazyhouse": 1.0})
    mm.playable = lambda: frozenset({"standard", "crazyhouse"})
    offers = {offer_to(mm, [bot("Rival")], time.time()).variant
              for _ in range(10)}
    assert offers == {"crazyhouse"}
    mm.playable = lambda: frozenset({"standard"})
    assert mm.choose([bot("Rival")], time.time()) is None
