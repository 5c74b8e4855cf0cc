"""The level of a game: the `strength` rules read, matched and clamped, the configuration
refusing a level that follows the opponent in rated games, and an external engine told the
level and its opponent where it declares the options, and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from bot.engines.levels import (
    FULL_STRENGTH,
    GameLevel,
    Opponent,
    choose_level,
    level_table,
)
from bot.engines.pool import EngineSpec, start_engine
from bot.engines.rules import GameFacts
from bot.ops.config import Config, ConfigError, StrengthConfig, parse_config
from bot.ops.strength import Level, parse_level

LEVEL_ENGINE = str(Path(__file__).resolve().parents[1] / "level_engine.py")
ALL_LEVEL_OPTIONS = ("UCI_LimitStrength", "UCI_Elo:1000:2500", "UCI_Opponent", "UCI_RatingAdv")


def casual(speed: str = "blitz", *, bot: bool = False, rated: bool = False) -> GameFacts:
    return GameFacts("standard", speed, rated, bot, arena=False)


def person(rating: int | None, name: str = "alice") -> Opponent:
    return Opponent(name, None, rating, bot=False)


def strength(text: str) -> StrengthConfig:
    return parse_config(text, "my.yml").strength


def elo_of(config: StrengthConfig, facts: GameFacts, opponent: Opponent,
           engine: str = "engine") -> int | None:
    return choose_level(config, facts, engine, opponent).elo


# -- the written level --


@pytest.mark.parametrize(("written", "level"), [
    ("full", Level("full")),
    (1800, Level("fixed", 1800)),
    ("opponent", Level("opponent", 0)),
    ("opponent + 100", Level("opponent", 100)),
    ("opponent-50", Level("opponent", -50)),
])
def test_a_level_is_full_a_number_or_the_opponent_moved(written: object, level: Level) -> None:
    assert parse_level(written) == level
    assert parse_level(str(level)) == level  # its text reads back the same


@pytest.mark.parametrize("written", ["strong", "opponent * 2", "opponent +", True, 1.5, -10,
                                     "5000"])
def test_a_bad_level_says_what_is_allowed(written: object) -> None:
    with pytest.raises(ValueError, match="must be full, a UCI_Elo from 0 to 4000, or opponent"):
        parse_level(written)


# -- the rules --


def test_the_default_plays_people_in_casual_games_at_their_level() -> None:
    config = Config().strength
    assert elo_of(config, casual("blitz"), person(1200)) == 1200 - 300
    assert elo_of(config, casual("bullet"), person(2000)) == 2000 - 400
    assert elo_of(config, casual("blitz", rated=True), person(1200)) is None
    assert elo_of(config, casual("blitz", bot=True), Opponent("b", "BOT", 1200, True)) is None
    # nothing to follow: full strength
    assert elo_of(config, casual("blitz"), person(None)) is None


def test_a_relative_level_is_moved_then_clamped() -> None:
    config = strength("strength: {rules: [{strength: opponent + 100, rated: false, min: 1100, "
                      "max: 1500}], lichess_offset: {blitz: -250}}")
    assert elo_of(config, casual("blitz"), person(1300)) == 1300 - 250 + 100
    assert elo_of(config, casual("blitz"), person(1000)) == 1100  # min
    assert elo_of(config, casual("blitz"), person(2000)) == 1500  # max
    assert elo_of(config, casual("rapid"), person(1600)) == 1600 - 350 + 100  # rapid's own


def test_the_first_matching_rule_sets_the_level_and_its_options() -> None:
    config = strength("""
strength:
  rules:
    - {strength: 2000, max_rating: 1399, options: {Contempt: 20}}
    - {strength: opponent - 50, rated: false, min_rating: 1400, max_rating: 1999}
    - {strength: 2600, engine: other, bot: true}
    - {strength: full}
  lichess_offset: {blitz: 0}
engines:
  default: engine
  entries: {engine: {}, other: {}}
""")
    beginner = choose_level(config, casual("blitz", rated=True), "engine", person(1000))
    assert (beginner.elo, dict(beginner.options), beginner.rule) == (2000, {"Contempt": 20}, 0)
    assert elo_of(config, casual("blitz"), person(1700)) == 1650
    assert elo_of(config, casual("blitz", rated=True), person(1700)) is None  # rule 3
    a_bot = Opponent("b", "BOT", 2500, True)
    assert elo_of(config, casual("blitz", bot=True), a_bot, "other") == 2600
    assert elo_of(config, casual("blitz", bot=True), a_bot, "engine") is None
    # a rating condition never holds for an unknown rating
    unknown = choose_level(config, casual("blitz"), "engine", person(None))
    assert (unknown.elo, unknown.rule) == (None, 3)


def test_a_level_reads_the_same_everywhere() -> None:
    assert str(FULL_STRENGTH) == "full strength"
    level = GameLevel(1250, opponent=person(1600), my_rating=1900)
    assert str(level) == "Elo 1250"
    assert level.rating_advantage == 300
    assert GameLevel(1250, opponent=person(None), my_rating=1900).rating_advantage is None


# -- the configuration refuses a level that follows the opponent in rated games --


@pytest.mark.parametrize("rule", [
    "{strength: opponent}",
    "{strength: opponent + 100, bot: false}",
    "{strength: opponent - 50, rated: true}",
    "{strength: opponent, rated: null, bot: false}",
])
def test_a_relative_level_that_can_meet_a_rated_game_is_refused(rule: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"strength: {{rules: [{rule}]}}", "my.yml")
    [problem] = caught.value.problems
    assert problem.startswith("my.yml: strength.rules[0].strength: ")
    assert "follows the opponent's rating, which only a casual game may do" in problem
    assert "add rated: false" in problem and "sandbagging" in problem


def test_a_fixed_level_may_play_rated_games() -> None:
    config = strength("strength: {rules: [{strength: 1800}, {strength: full, rated: true}]}")
    assert elo_of(config, casual("blitz", rated=True), person(1200)) == 1800


@pytest.mark.parametrize(("text", "problem"), [
    ("strength: {rules: [{strength: 1800, min: 1500, max: 1400}]}",
     "my.yml: strength.rules[0].min: must not be greater than max (1500 > 1400)"),
    ("strength: {rules: [{strength: full, min_rating: 2000, max_rating: 1000}]}",
     "my.yml: strength.rules[0].min_rating: must not be greater than max_rating (2000 > 1000)"),
    ("strength: {rules: [{strength: full, engine: fairy}]}",
     "my.yml: strength.rules[0].engine: must name one of the engines (engine), got 'fairy'"),
    ("strength: {rules: [{rated: false}]}",
     "my.yml: strength.rules[0]: must be a mapping with a strength and its conditions"),
    ("strength: {rules: [{strength: fast}]}",
     "my.yml: strength.rules[0].strength: must be full, a UCI_Elo from 0 to 4000"),
    ("strength: {lichess_offset: {blitz: 2000}}",
     "my.yml: strength.lichess_offset: offset of blitz must be an integer from -1000 to 1000"),
    ("strength: {lichess_offset: {ultraBullet: 0}}",
     "my.yml: strength.lichess_offset: keys must be one of bullet, blitz, rapid, classical, "
     "correspondence"),
    ("strength: {rules: [{strength: full, colour: white}]}",
     "my.yml: strength.rules[0].colour: unknown key"),
])
def test_bad_strength_keys_name_the_key(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "my.yml")
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


def test_the_table_shows_each_speed_for_the_three_ratings() -> None:
    lines = level_table(Config())
    assert lines[0].split() == ["speed", "opponent", "1200", "1600", "2000"]
    rows = {" ".join(line.split()[:3]): line.split()[3:] for line in lines[1:]}
    assert rows["blitz person, casual"] == ["900", "1300", "1700"]
    assert rows["rapid person, casual"] == ["850", "1250", "1650"]
    assert rows["bullet person, rated"] == ["full", "full", "full"]
    assert rows["classical bot, casual"] == ["full", "full", "full"]
    assert len(rows) == 5 * 4


def test_the_table_gives_each_rating_the_engine_its_rule_picks() -> None:
    """An engine rule on the opponent's rating picks the engine the strength rules see."""
    config = parse_config("""
engines:
  default: main
  entries: {main: {}, club: {}}
  rules: [{engine: club, max_rating: 1600}]
strength:
  rules: [{strength: 1500, engine: club}]
""")
    rows = {" ".join(line.split()[:3]): line.split()[3:] for line in level_table(config)[1:]}
    assert rows["blitz person, rated"] == ["1500", "1500", "full"]


# -- an external engine is told what it declares, and nothing else --


async def received(tmp_path: Path, level: GameLevel, *declared: str,
                   options: dict[str, str | int | bool] | None = None) -> list[str]:
    """The `setoption` lines an engine declaring `declared` (started with `options`) receives,
    then for `level` and the game's first search (python-chess sends UCI_Opponent after the
    game's `ucinewgame`)."""
    engine = await start_engine(EngineSpec((sys.executable, LEVEL_ENGINE, str(tmp_path),
                                            *declared), options or {}))
    try:
        await engine.set_level(level)
        await engine.think(chess.Board(), chess.engine.Limit(depth=1), hard_limit_s=30.0,
                           game="a game")
    finally:
        await engine.close()
    return setoptions(tmp_path)


def setoptions(log_dir: Path) -> list[str]:
    """The `setoption` lines in the one engine log of `log_dir`."""
    [log] = log_dir.glob("*.log")
    return [line for line in log.read_text().splitlines() if line.startswith("setoption")]


async def test_an_engine_that_declares_them_gets_the_level_and_the_opponent(
        tmp_path: Path) -> None:
    level = GameLevel(900, opponent=person(1200, "alice"), my_rating=1900)
    assert await received(tmp_path, level, *ALL_LEVEL_OPTIONS) == [
        "setoption name UCI_LimitStrength value true",
        "setoption name UCI_Elo value 1000",  # clamped to the declared 1000-2500
        "setoption name UCI_RatingAdv value 700",
        "setoption name UCI_Opponent value none 1200 human alice",
    ]


async def test_a_bot_opponent_and_full_strength(tmp_path: Path) -> None:
    level = GameLevel(None, opponent=Opponent("somebot", "BOT", 2400, True), my_rating=2300)
    # UCI_LimitStrength stays at its declared false: python-chess sends only a change
    assert await received(tmp_path, level, *ALL_LEVEL_OPTIONS) == [
        "setoption name UCI_RatingAdv value -100",
        "setoption name UCI_Opponent value BOT 2400 computer somebot",
    ]


async def test_an_engine_that_declares_nothing_is_told_nothing(tmp_path: Path) -> None:
    level = GameLevel(1500, {"Contempt": 20}, opponent=person(1600), my_rating=1500)
    assert await received(tmp_path, level) == []


async def test_an_engine_gets_only_the_options_it_declares(tmp_path: Path) -> None:
    level = GameLevel(1500, {"Contempt": 20, "Nonsense": 3}, opponent=person(1600),
                      my_rating=1500)
    assert await received(tmp_path, level, "UCI_Elo:500:3200", "Contempt") == [
        "setoption name Contempt value 20",
        "setoption name UCI_Elo value 1500",
    ]


async def test_a_game_no_rule_matched_keeps_the_configured_strength(tmp_path: Path) -> None:
    """engine.options may limit the engine for every game: a game no strength rule matched
    keeps that; a rule's `full` lifts it."""
    fixed: dict[str, str | int | bool] = {"UCI_LimitStrength": True, "UCI_Elo": 1500}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    start = ["setoption name UCI_LimitStrength value true", "setoption name UCI_Elo value 1500"]
    unmatched = GameLevel(None, opponent=person(1600), rule=None)
    assert await received(tmp_path / "a", unmatched, *ALL_LEVEL_OPTIONS, options=fixed) == [
        *start, "setoption name UCI_Opponent value none 1600 human alice"]
    full = GameLevel(None, opponent=person(1600), rule=0)
    assert await received(tmp_path / "b", full, *ALL_LEVEL_OPTIONS, options=fixed) == [
        *start, "setoption name UCI_LimitStrength value false",
        "setoption name UCI_Opponent value none 1600 human alice"]
