"""Choosing each game's engine by the `engines` rules, and the rule checks of check-config."""

from __future__ import annotations

import pytest

from bot.engines.engineset import EngineSet, challenge_facts, game_facts
from bot.engines.rules import (
    SINGLE_ENGINE,
    EngineTable,
    GameFacts,
    pick_engine,
    reachable,
    rule_problems,
    variant_problems,
)
from bot.lichess.events import Challenge, ChallengeUser, GameInfo, TimeControl
from bot.ops.config import ChallengeConfig, Config, parse_config

TABLE = EngineTable.from_config(parse_config("""
engines:
  default: builtin
  entries: {builtin: {}, fairy: {command: fs}, bullet: {move_overhead_s: 0.3},
            arena: {}, people: {}}
  rules:
    - {engine: fairy, variants: [atomic, crazyhouse]}
    - {engine: bullet, speeds: [ultraBullet, bullet]}
    - {engine: arena, arena: true, rated: true}
    - {engine: people, bot: false}
"""))


def facts(variant: str = "standard", speed: str = "blitz", *, rated: bool = True,
          bot: bool | None = True, arena: bool = False,
          rating: int | None = None) -> GameFacts:
    return GameFacts(variant, speed, rated, bot, arena, rating)


@pytest.mark.parametrize(("game", "engine"), [
    (facts(), "builtin"),                                   # no rule: the default
    (facts("atomic"), "fairy"),
    (facts("crazyhouse", "bullet"), "fairy"),               # the first rule that matches wins
    (facts(speed="bullet"), "bullet"),
    (facts(arena=True), "arena"),
    (facts(arena=True, rated=False), "builtin"),            # every condition must hold
    (facts(bot=False), "people"),
    (facts(bot=None), "builtin"),                           # not known: no `bot` rule matches
    (facts(bot=False, arena=True), "arena"),
])
def test_the_first_matching_rule_picks_the_engine(game: GameFacts, engine: str) -> None:
    assert pick_engine(TABLE, game) == engine


RATED_TABLE = EngineTable.from_config(parse_config("""
engines:
  default: builtin
  entries: {builtin: {}, club: {}, strong: {}}
  rules:
    - {engine: club, min_rating: 1200, max_rating: 1800}
    - {engine: strong, min_rating: 2200}
"""))


@pytest.mark.parametrize(("rating", "engine"), [
    (1199, "builtin"), (1200, "club"), (1500, "club"), (1800, "club"), (1801, "builtin"),
    (2199, "builtin"), (2200, "strong"), (3000, "strong"),
    (None, "builtin"),                                      # unknown: meets neither bound
])
def test_a_rating_rule_picks_its_engine_only_inside_its_range(rating: int | None,
                                                              engine: str) -> None:
    assert pick_engine(RATED_TABLE, facts(rating=rating)) == engine


def test_the_opponent_s_rating_comes_from_the_challenge_and_the_game_start() -> None:
    challenger = ChallengeUser("alice", "Alice", None, 1500)
    challenge = Challenge("c1", challenger, None, "standard", "blitz", True,
                          TimeControl("clock", 180, 2), "random", None, (), None, True)
    assert challenge_facts(challenge).rating == 1500
    info = GameInfo(game_id="g", full_id="g1234", color="white", variant="standard",
                    speed="blitz", rated=True, source="friend", status="started",
                    opponent_id="alice", opponent_name="Alice", winner=None,
                    opponent_rating=2300)
    assert pick_engine(RATED_TABLE, game_facts(info, bot=False)) == "strong"


def test_without_engines_the_engine_section_plays_every_game() -> None:
    config = Config()
    table = EngineTable.from_config(config)
    assert table.entries == {SINGLE_ENGINE: config.engine} and table.rules == ()
    assert pick_engine(table, facts("atomic", "bullet", arena=True)) == SINGLE_ENGINE
    assert reachable(table) == (SINGLE_ENGINE,)


def test_reachable_engines_follow_the_rules_then_the_default() -> None:
    table = EngineTable.from_config(parse_config(
        "engines: {default: a, entries: {a: {}, b: {}, unused: {}},"
        " rules: [{engine: b, speeds: [bullet]}, {engine: a, arena: true}]}"))
    assert reachable(table) == ("b", "a")


def rules(*lines: str, challenge: str = "") -> list[str]:
    text = ("engines:\n  default: a\n  entries: {a: {}, b: {}}\n  rules:\n"
            + "".join(f"    - {line}\n" for line in lines) + challenge)
    config = parse_config(text)
    return rule_problems(EngineTable.from_config(config), config.challenge)


def test_sound_rules_have_no_problems() -> None:
    assert rule_problems(TABLE, ChallengeConfig()) == []
    assert rules("{engine: b, speeds: [bullet]}", "{engine: a, speeds: [bullet, blitz]}") == []


def test_a_rule_shadowed_by_an_earlier_wider_one_never_matches() -> None:
    assert rules("{engine: a}", "{engine: b, variants: [atomic]}") == [
        "engines.rules[1] (engine b) never matches: every game it matches is taken by "
        "engines.rules[0] (engine a) first"]
    assert rules("{engine: a, speeds: [bullet, blitz]}",
                 "{engine: b, speeds: [bullet], rated: true}") != []
    # narrower first, or conditions that differ: both can match
    assert rules("{engine: a, rated: true}", "{engine: b, rated: false}") == []
    assert rules("{engine: a, speeds: [bullet]}", "{engine: b}") == []
    # a rating range covers only a range inside it (no range also matches unknown ratings)
    assert rules("{engine: a, min_rating: 1000, max_rating: 2000}",
                 "{engine: b, min_rating: 1200, max_rating: 1800}") != []
    assert rules("{engine: a}", "{engine: b, min_rating: 1200}") != []
    assert rules("{engine: a, min_rating: 1200}", "{engine: b}") == []
    assert rules("{engine: a, min_rating: 1200}", "{engine: b, max_rating: 1800}") == []
    assert rules("{engine: a, max_rating: 1800}", "{engine: b, min_rating: 1200, "
                 "max_rating: 1900}") == []


def test_a_rule_the_challenge_settings_contradict_never_matches() -> None:
    assert rules("{engine: b, variants: [horde], arena: false}",
                 challenge="challenge: {variants: [standard]}\n") == [
        "engines.rules[0] (engine b) never matches a game outside arenas: its variants "
        "(horde) are not in challenge.variants"]
    assert rules("{engine: b, speeds: [classical], arena: false}",
                 challenge="challenge: {speeds: [bullet, blitz]}\n") != []
    assert rules("{engine: b, rated: true, arena: false}",
                 challenge="challenge: {accept_rated: false}\n") != []
    assert rules("{engine: b, bot: false, arena: false}",
                 challenge="challenge: {accept_humans: false}\n") == [
        "engines.rules[0] (engine b) never matches a game outside arenas: it wants human "
        "opponents and challenge.accept_humans is false"]
    # a rule that may match arena games: arena pairings are no challenges
    assert rules("{engine: b, variants: [horde]}",
                 challenge="challenge: {variants: [standard]}\n") == []


def test_a_variant_the_rules_engine_does_not_declare() -> None:
    declared = {"fairy": frozenset({"standard", "chess960", "fromPosition", "crazyhouse"}),
                "bullet": frozenset({"standard"})}
    assert variant_problems(TABLE, declared) == [
        "engines.rules[0] (engine fairy): the engine does not play atomic (it plays "
        "chess960, crazyhouse, fromPosition, standard)"]
    assert variant_problems(TABLE, {}) == []  # engines that could not be asked


def test_a_started_game_goes_to_an_engine_that_plays_its_variant() -> None:
    """EngineSet: the rules' engine, unless it cannot play the game's variant (an arena or
    matchmaking game was judged by no challenge rule): then the first engine that can."""
    set_ = EngineSet.from_config(parse_config(
        "engines: {default: a, entries: {a: {command: x}, b: {command: y}},"
        " rules: [{engine: b, speeds: [bullet]}]}"), None)
    set_.pools["a"].variants = frozenset({"standard", "atomic"})
    set_.pools["b"].variants = frozenset({"standard"})
    assert set_.choose_playable(facts(speed="bullet")) == "b"
    assert set_.choose_playable(facts("atomic", "bullet")) == "a"
    assert set_.choose_playable(facts("horde", "bullet")) == "b"  # none can: the rules' own
    assert set_.variants_for(facts("atomic", "bullet")) == {"standard"}  # challenges: strict
    assert set_.variants == {"standard", "atomic"}
