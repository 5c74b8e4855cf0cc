"""The level a game is played at: the `strength` rules as pure functions.

A game's level is chosen once, at its first gameFull, when the opponent's title and rating
are known: the first rule whose every condition holds sets it, full strength when none does.
A level that follows the opponent maps the opponent's Lichess rating to the engine's scale
(`strength.lichess_offset` of the game's speed), adds the rule's difference, and keeps within
the rule's `min` and `max`. The configuration refuses such a rule unless it is for casual
games only (bot/ops/config.py), so a rated game's level never depends on the opponent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from bot.engines.rules import EngineTable, GameFacts, matches, pick_engine
from bot.ops.config import Config, StrengthConfig, StrengthRuleConfig
from bot.ops.strength import parse_level

TABLE_RATINGS: Final = (1200, 1600, 2000)  # the opponents check-config shows the levels of
TABLE_SPEEDS: Final = ("bullet", "blitz", "rapid", "classical", "correspondence")


@dataclass(frozen=True, slots=True)
class Opponent:
    """Who the bot plays: what the engine may be told (UCI_Opponent, UCI_RatingAdv)."""

    name: str
    title: str | None
    rating: int | None  # in the game's perf; None: unknown (an AI, a provisional oddity)
    bot: bool


@dataclass(frozen=True, slots=True)
class GameLevel:
    """A game's level: `elo` None is full strength; `options` the rule's UCI options."""

    elo: int | None
    options: Mapping[str, str | int | bool] = field(
        default_factory=lambda: MappingProxyType({}))
    rule: int | None = None  # the index of the rule that set it (None: no rule matched)
    opponent: Opponent | None = None
    my_rating: int | None = None  # ours in the game's perf (UCI_RatingAdv)

    def __str__(self) -> str:
        """How the level reads in the log, the status page and the greeting."""
        return "full strength" if self.elo is None else f"Elo {self.elo}"

    @property
    def rating_advantage(self) -> int | None:
        """Our rating minus the opponent's (UCI_RatingAdv), when both are known."""
        opponent = self.opponent.rating if self.opponent is not None else None
        return None if opponent is None or self.my_rating is None else self.my_rating - opponent


FULL_STRENGTH: Final = GameLevel(None)


def rule_matches(rule: StrengthRuleConfig, facts: GameFacts, engine: str) -> bool:
    """Does every condition of `rule` hold for this game, played on `engine`?"""
    return (rule.engine is None or rule.engine == engine) and matches(rule, facts)


def level_elo(rule: StrengthRuleConfig, strength: StrengthConfig, speed: str,
              rating: int | None) -> int | None:
    """The UCI_Elo a rule gives (None: full strength). A level that follows an opponent of
    unknown rating is full strength: nothing to follow."""
    level = parse_level(rule.strength)
    if level.kind == "full":
        return None
    if level.kind == "fixed":
        elo = level.elo
    elif rating is None:
        return None
    else:
        elo = rating + strength.offset(speed) + level.elo
    if rule.min is not None:
        elo = max(elo, rule.min)
    if rule.max is not None:
        elo = min(elo, rule.max)
    return elo


def choose_level(strength: StrengthConfig, facts: GameFacts, engine: str,
                 opponent: Opponent | None, my_rating: int | None = None) -> GameLevel:
    """The level of a game: the first matching rule's, else full strength. A relative level
    is never applied to a rated game, whatever the rules say (they are refused when read).
    The rating conditions read the opponent's rating, the one the level follows."""
    rating = opponent.rating if opponent is not None else None
    facts = dataclasses.replace(facts, rating=rating)
    for index, rule in enumerate(strength.rules):
        if not rule_matches(rule, facts, engine):
            continue
        follows = parse_level(rule.strength).follows_opponent
        elo = None if follows and facts.rated else level_elo(rule, strength, facts.speed,
                                                                 rating)
        return GameLevel(elo, rule.options, index, opponent, my_rating)
    return GameLevel(None, MappingProxyType({}), None, opponent, my_rating)


def level_table(config: Config) -> list[str]:
    """The levels a person rated 1,200, 1,600 and 2,000 (and a bot of the same ratings) gets
    in each speed, casual and rated, standard chess outside arenas: check-config's table."""
    table = EngineTable.from_config(config)
    head = f"{'speed':<15} {'opponent':<16}" + "".join(f"{r:>8}" for r in TABLE_RATINGS)
    lines = [head]
    for speed in TABLE_SPEEDS:
        for bot, rated in ((False, False), (False, True), (True, False), (True, True)):
            cells = []
            for rating in TABLE_RATINGS:
                facts = GameFacts("standard", speed, rated, bot, arena=False, rating=rating)
                engine = pick_engine(table, facts)
                level = choose_level(config.strength, facts, engine,
                                     Opponent("someone", None, rating, bot))
                cells.append(f"{'full' if level.elo is None else level.elo:>8}")
            who = f"{'bot' if bot else 'person'}, {'rated' if rated else 'casual'}"
            lines.append(f"{speed:<15} {who:<16}" + "".join(cells))
    return lines
