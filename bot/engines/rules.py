"""Which engine plays a game: the `engines` rules as pure functions, and their checks.

A game is described by its `GameFacts` (variant, speed, rated, bot opponent, arena, the
opponent's rating); the first rule whose every condition holds names the engine, else the
default does. Without an `engines` section the single `engine` section plays every game,
under the name `engine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from bot.ops.config import (
    ChallengeConfig,
    Config,
    EngineConfig,
    EngineRuleConfig,
    GameConditionsConfig,
)

SINGLE_ENGINE: Final = "engine"  # the name of the `engine` section when it plays every game


@dataclass(frozen=True, slots=True)
class GameFacts:
    """What the rules look at. `bot` None: not known (no rule with a `bot` condition
    matches then); `arena`: the game carries a tournamentId; `rating`: the opponent's in
    the game's perf, None when not known (no rule with a rating condition matches then)."""

    variant: str
    speed: str
    rated: bool
    bot: bool | None
    arena: bool
    rating: int | None = None


@dataclass(frozen=True, slots=True)
class EngineTable:
    """The engines by name, the rules in order, and the default."""

    entries: Mapping[str, EngineConfig]
    rules: tuple[EngineRuleConfig, ...]
    default: str

    @classmethod
    def from_config(cls, config: Config) -> EngineTable:
        if config.engines is None:
            return cls(MappingProxyType({SINGLE_ENGINE: config.engine}), (), SINGLE_ENGINE)
        return cls(config.engines.entries, config.engines.rules, config.engines.default)


def _within_rating(rule: GameConditionsConfig, rating: int | None) -> bool:
    """Does the opponent's rating meet the rule's range? An unknown one meets no bound."""
    if rule.min_rating is None and rule.max_rating is None:
        return True
    return rating is not None and (rule.min_rating is None or rating >= rule.min_rating) \
        and (rule.max_rating is None or rating <= rule.max_rating)


def matches(rule: GameConditionsConfig, facts: GameFacts) -> bool:
    """Does every game condition of `rule` (an engine or a strength rule) hold for this
    game?"""
    return ((rule.variants is None or facts.variant in rule.variants)
            and (rule.speeds is None or facts.speed in rule.speeds)
            and (rule.rated is None or rule.rated == facts.rated)
            and (rule.bot is None or rule.bot == facts.bot)
            and (rule.arena is None or rule.arena == facts.arena)
            and _within_rating(rule, facts.rating))


def pick_engine(table: EngineTable, facts: GameFacts) -> str:
    """The name of the engine that plays this game: the first matching rule's, else the
    default."""
    for rule in table.rules:
        if matches(rule, facts):
            return rule.engine
    return table.default


def _covers(earlier: EngineRuleConfig, later: EngineRuleConfig) -> bool:
    """Does every game `later` matches also match `earlier` (so `later` never wins)?"""
    def wider(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
        return a is None or (b is not None and set(b) <= set(a))

    def same_or_any(a: bool | None, b: bool | None) -> bool:
        return a is None or a == b

    # A bound covers only a bound inside it: a rule without one also matches the ratings
    # beyond it, and unknown ones.
    rating_inside = ((earlier.min_rating is None or (
        later.min_rating is not None and later.min_rating >= earlier.min_rating))
        and (earlier.max_rating is None or (
            later.max_rating is not None and later.max_rating <= earlier.max_rating)))
    return (wider(earlier.variants, later.variants) and wider(earlier.speeds, later.speeds)
            and same_or_any(earlier.rated, later.rated) and same_or_any(earlier.bot, later.bot)
            and same_or_any(earlier.arena, later.arena) and rating_inside)


def _describe(index: int, rule: EngineRuleConfig) -> str:
    return f"engines.rules[{index}] (engine {rule.engine})"


def rule_problems(table: EngineTable, challenge: ChallengeConfig) -> list[str]:
    """Rules that can never pick their engine: shadowed by an earlier rule, or asking for
    games the challenge settings decline. An arena game comes from no challenge, so a rule
    that may match arena games is held only to what it says itself."""
    problems = []
    for index, rule in enumerate(table.rules):
        shadow = next((i for i, earlier in enumerate(table.rules[:index])
                       if _covers(earlier, rule)), None)
        if shadow is not None:
            problems.append(f"{_describe(index, rule)} never matches: every game it matches "
                            f"is taken by {_describe(shadow, table.rules[shadow])} first")
            continue
        if rule.arena is not False:
            continue  # arena pairings are not challenges: the challenge settings do not apply
        why = None
        if rule.variants is not None and not set(rule.variants) & set(challenge.variants):
            why = (f"its variants ({', '.join(rule.variants)}) are not in challenge.variants")
        elif rule.speeds is not None and not set(rule.speeds) & set(challenge.speeds):
            why = f"its speeds ({', '.join(rule.speeds)}) are not in challenge.speeds"
        elif rule.rated is True and not challenge.accept_rated:
            why = "it wants rated games and challenge.accept_rated is false"
        elif rule.rated is False and not challenge.accept_casual:
            why = "it wants casual games and challenge.accept_casual is false"
        elif rule.bot is True and not challenge.accept_bots:
            why = "it wants bot opponents and challenge.accept_bots is false"
        elif rule.bot is False and not challenge.accept_humans:
            why = "it wants human opponents and challenge.accept_humans is false"
        if why is not None:
            problems.append(f"{_describe(index, rule)} never matches a game outside arenas: "
                            f"{why}")
    return problems


def variant_problems(table: EngineTable, declared: Mapping[str, frozenset[str]]) -> list[str]:
    """Rules that send a variant to an engine that does not declare it. `declared`: the
    variants each engine plays (an engine missing from it could not be asked)."""
    problems = []
    for index, rule in enumerate(table.rules):
        variants = declared.get(rule.engine)
        if variants is None or rule.variants is None:
            continue
        missing = [variant for variant in rule.variants if variant not in variants]
        if missing:
            problems.append(f"{_describe(index, rule)}: the engine does not play "
                            f"{', '.join(missing)} (it plays {', '.join(sorted(variants))})")
    return problems


def reachable(table: EngineTable) -> tuple[str, ...]:
    """The engines some game can be given (rule order, then the default), each once."""
    names = [rule.engine for rule in table.rules] + [table.default]
    return tuple(dict.fromkeys(names))
