"""Choosing each game's engine by the `engines` rules, and the rule checks of check-config."""

from __future__ import annotations

import pytest

from bot.engines.engineset import EngineSet
from bot.engines.rules import (
    SINGLE_ENGINE,
    EngineTable,
    GameFacts,
    pick_engine,
    reachable,
    rule_problems,
    variant_problems,
)
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
          bot: bool | None = True, arena: bool = False) -> GameFacts:
    return GameFacts(variant, speed, rated, bot, arena)


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
