"""The bot's configuration: config.yml read once into frozen dataclasses.

`Config()` with no arguments is the documented default configuration (the
root config.yml spells out the same values). `load_config(path)` reads a YAML
file over those defaults: every key is checked, every error names the file,
the key path and what is allowed, unknown keys get a did-you-mean, and all
problems are reported together in one `ConfigError`.

The token is never part of the configuration (see bot/token.py).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar, get_args

import yaml

from bot.lichess.variants import LICHESS_VARIANTS
from bot.ops.strength import parse_level

T = TypeVar("T")

# Every Lichess variant; which of them are played depends on the engine (bot.engines.pool).
PLAYABLE_VARIANTS = LICHESS_VARIANTS
ENGINE_PROTOCOLS = ("uci", "xboard")
SYZYGY_VARIANTS = ("atomic", "antichess")  # variants with Syzygy tables of their own
SPEEDS = ("ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence")  # fastest first
CHAT_ROOMS = ("player", "spectator")
GREETING_PLACEHOLDERS = ("me", "opponent", "engine", "strength")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
ShutdownAction = Literal["resign", "abandon"]  # what the games still running get at a stop
QueueOrder = Literal["first", "best"]  # queued challenges: in arrival order, or best first
ChallengeColor = Literal["alternate", "random"]  # the colour matchmaking asks for
LiveView = Literal["auto", "always", "never"]  # the live status view on a terminal
QUEUE_ORDERS = get_args(QueueOrder)
# fromPosition needs a FEN of our choosing.
MATCHMAKING_VARIANTS = tuple(v for v in LICHESS_VARIANTS if v != "fromPosition")
MATCHMAKING_MODES = ("rated", "casual")
# What Lichess accepts in a challenge: clock.limit seconds, increments, days per move.
CLOCK_LIMITS_S = frozenset({0, 15, 30, 45, 60, 90, *range(120, 10_800 + 1, 60)})
MAX_CLOCK_INCREMENT_S = 60
CORRESPONDENCE_DAYS = (1, 2, 3, 5, 7, 10, 14)
MIN_BOT_CLOCK_ESTIMATE_S = 30  # limit + 40 * increment below this is ultraBullet: bots may not


class ConfigError(Exception):
    """The configuration cannot be used; `problems` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Invalid(Exception):
    """One value is not allowed; the message says what is (`must be ...`)."""


# --- value checks: raw YAML value -> typed value, or _Invalid -------------------------

Check = Callable[[Any], Any]


def _got(value: object) -> str:
    return f"got {value!r}"


def _allowed(what: str, minimum: float | None, maximum: float | None,
             exclusive_min: bool = False) -> str:
    """"must be a number of seconds >= 0": what a bounded number key allows."""
    bounds = []
    if minimum is not None:
        bounds.append(f"{'>' if exclusive_min else '>='} {minimum:g}")
    if maximum is not None:
        bounds.append(f"<= {maximum:g}")
    return f"must be {what}" + (f" {' and '.join(bounds)}" if bounds else "")


def _number(minimum: float | None = None, maximum: float | None = None,
            what: str = "a number of seconds", exclusive_min: bool = False) -> Check:
    allowed = _allowed(what, minimum, maximum, exclusive_min)

    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"{allowed}, {_got(value)}")
        number = float(value)
        too_low = minimum is not None and (
            number <= minimum if exclusive_min else number < minimum)
        if not math.isfinite(number) or too_low or (maximum is not None and number > maximum):
            raise _Invalid(f"{allowed}, {_got(value)}")
        return number
    return check


def _integer(minimum: int | None = None, maximum: int | None = None,
             what: str = "an integer") -> Check:
    allowed = _allowed(what, minimum, maximum)

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"{allowed}, {_got(value)}")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise _Invalid(f"{allowed}, {_got(value)}")
        return value
    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"must be true or false, {_got(value)}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"must be a text string, {_got(value)}")
    return value


def _choice(*allowed: str) -> Check:
    def check(value: Any) -> str:
        if value not in allowed:
            raise _Invalid(f"must be one of {', '.join(allowed)}, {_got(value)}")
        return str(value)
    return check


def _choices(*allowed: str, nonempty: bool = False) -> Check:
    """A list drawn from `allowed`, without repeats; kept as a tuple."""
    def check(value: Any) -> tuple[str, ...]:
        what = f"a list of {', '.join(allowed)}" + (" (at least one)" if nonempty else "")
        if not isinstance(value, list) or (nonempty and not value):
            raise _Invalid(f"must be {what}, {_got(value)}")
        bad = [item for item in value if item not in allowed]
        if bad:
            raise _Invalid(f"must be {what}; {bad[0]!r} is not one of them")
        if len(set(value)) != len(value):
            raise _Invalid(f"must be {what} without repeats, {_got(value)}")
        return tuple(value)
    return check


def _usernames(value: Any) -> tuple[str, ...]:
    """Lichess user names, compared case-insensitively, so kept lower-case."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _Invalid(f"must be a list of user names, {_got(value)}")
    return tuple(name.lower() for name in value)


def _path(value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise _Invalid(f"must be a file or directory path, {_got(value)}")
    return Path(value)


def _optional(check: Check) -> Check:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)
    return optional


def _paths(value: Any) -> tuple[Path, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"must be a list of paths, {_got(value)}")
    try:
        return tuple(_path(item) for item in value)
    except _Invalid:
        raise _Invalid(f"must be a list of paths, {_got(value)}") from None


def _url(value: Any) -> str:
    allowed = "must be an http:// or https:// URL"
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise _Invalid(f"{allowed}, {_got(value)}")
    host = value.split("://", 1)[1].split("/", 1)[0]
    if not host or any(ch.isspace() for ch in value):
        raise _Invalid(f"{allowed} with a host name, {_got(value)}")
    return value.rstrip("/")


def parse_url(text: str) -> str:
    """A server base URL as the config key `url` allows it (no trailing slash); ValueError
    says what is wrong."""
    try:
        return str(_url(text))
    except _Invalid as error:
        raise ValueError(str(error)) from None


def _engine_command(value: Any) -> tuple[str, ...] | None:
    """null (the built-in engine), a program path, or an argv list."""
    if value is None:
        return None
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise _Invalid("must be null (the built-in engine), a program path, or a list of "
                   f"program and arguments, {_got(value)}")


THREADS_OPTION: Final = "Threads"  # the UCI option of an engine's search threads


def _uci_options(value: Any) -> Mapping[str, str | int | bool]:
    if not isinstance(value, dict):
        raise _Invalid(f"must be a mapping of UCI option names to values, {_got(value)}")
    for name, option in value.items():
        if not isinstance(name, str) or not name:
            raise _Invalid(f"option names must be text, {_got(name)}")
        if name.lower() == THREADS_OPTION.lower() and (
                isinstance(option, bool) or not isinstance(option, int) or option < 1):
            raise _Invalid(f"option {name!r} must be a number of threads >= 1, {_got(option)}")
        if not isinstance(option, str | int | bool):
            raise _Invalid(f"option {name!r} must be an integer, text or true/false, "
                           f"{_got(option)}")
    return MappingProxyType(dict(value))


def _books(value: Any) -> Mapping[str, tuple[Path, ...]]:
    if not isinstance(value, dict):
        raise _Invalid(f"must be a mapping of variant to a list of book paths, {_got(value)}")
    books: dict[str, tuple[Path, ...]] = {}
    for variant, paths in value.items():
        if variant not in PLAYABLE_VARIANTS:
            raise _Invalid(f"variants must be one of {', '.join(PLAYABLE_VARIANTS)}, "
                           f"{_got(variant)}")
        try:
            books[variant] = _paths(paths)
        except _Invalid as error:
            raise _Invalid(f"{variant}: {error}") from None
    return MappingProxyType(books)


def _variant_paths(*variants: str) -> Check:
    """A mapping of variant key to a list of directories."""
    def check(value: Any) -> Mapping[str, tuple[Path, ...]]:
        if not isinstance(value, dict):
            raise _Invalid(f"must be a mapping of {', '.join(variants)} to lists of "
                           f"directories, {_got(value)}")
        found: dict[str, tuple[Path, ...]] = {}
        for variant, paths in value.items():
            if variant not in variants:
                raise _Invalid(f"variants must be one of {', '.join(variants)}, {_got(variant)}")
            try:
                found[variant] = _paths(paths)
            except _Invalid as error:
                raise _Invalid(f"{variant}: {error}") from None
        return MappingProxyType(found)
    return check


def _greeting(value: Any) -> str:
    """A chat line with {me}, {opponent}, {engine}, {strength} placeholders; empty = say
    nothing."""
    text = _text(value)
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as error:
        raise _Invalid(f"must be a valid template ({error}; write {{{{ for a literal "
                       f"brace), {_got(value)}") from None
    for name in fields:
        if name not in GREETING_PLACEHOLDERS:
            allowed = ", ".join("{" + p + "}" for p in GREETING_PLACEHOLDERS)
            raise _Invalid(f"may use only the placeholders {allowed}, got {{{name}}}")
    return text


def parse_time_control(text: str) -> tuple[int, int, int | None]:
    """A challenge time control: "<minutes>+<increment>" (clock.limit s, increment s, None)
    or "<days>d" (0, 0, days per move); ValueError says what is allowed."""
    text = text.strip()
    if text.endswith("d"):
        try:
            days = int(text[:-1])
        except ValueError:
            days = -1
        if days not in CORRESPONDENCE_DAYS:
            raise ValueError(f"days per move must be one of "
                             f"{', '.join(map(str, CORRESPONDENCE_DAYS))}, got {text!r}")
        return 0, 0, days
    minutes, plus, increment = text.partition("+")
    try:
        limit_s = round(float(minutes) * 60) if plus else -1
        increment_s = int(increment) if plus else -1
    except ValueError:
        limit_s = increment_s = -1
    if limit_s not in CLOCK_LIMITS_S or not 0 <= increment_s <= MAX_CLOCK_INCREMENT_S:
        raise ValueError("must be <minutes>+<increment> (minutes 0, 0.25, 0.5, 0.75, 1, 1.5 "
                         f"or whole up to 180; increment 0 to 60) or <days>d, got {text!r}")
    if limit_s + 40 * increment_s < MIN_BOT_CLOCK_ESTIMATE_S:
        raise ValueError(f"{text!r} is UltraBullet, which bots may not play")
    return limit_s, increment_s, None


def _weights(*allowed: str) -> Check:
    """A mapping of choices to weights (numbers >= 0, at least one above 0)."""
    def check(value: Any) -> Mapping[str, float]:
        what = "a mapping of " + (", ".join(allowed) if allowed else "time controls")
        if not isinstance(value, dict) or not value:
            raise _Invalid(f"must be {what} to weights, {_got(value)}")
        weights: dict[str, float] = {}
        for name, weight in value.items():
            if allowed and name not in allowed:
                raise _Invalid(f"keys must be one of {', '.join(allowed)}, {_got(name)}")
            if not allowed:
                try:
                    parse_time_control(str(name))
                except ValueError as error:
                    raise _Invalid(f"time control {error}") from None
            if isinstance(weight, bool) or not isinstance(weight, int | float) \
                    or not math.isfinite(weight) or weight < 0:
                raise _Invalid(f"weight of {name!r} must be a number >= 0, {_got(weight)}")
            weights[str(name)] = float(weight)
        if not any(weights.values()):
            raise _Invalid(f"needs at least one weight above 0, {_got(value)}")
        return MappingProxyType(weights)
    return check


def _urls(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"must be a list of http:// or https:// URLs, {_got(value)}")
    return tuple(_url(item) for item in value)


# A Lichess arena id: eight letters and digits (lila Tournament.makeId).
ARENA_ID_PATTERN = re.compile(r"[A-Za-z0-9]{8}")
ARENA_URL_PREFIX = re.compile(r"^https?://[^/]+/tournament/")
SWISS_URL = re.compile(r"^(https?://)?[^/]*/swiss/")
ARENA_KEYS = ("id", "team", "password")


@dataclass(frozen=True)
class ArenaEntry:
    """One arena to join: its id, the team to play for (team battles), its entry code."""

    id: str
    team: str | None = None
    password: str | None = None


def parse_arena_id(text: str) -> str:
    """An arena id, or its URL (https://lichess.org/tournament/<id>), as the id."""
    if SWISS_URL.search(text.strip()):
        # lila modules/game/src/main/Game.scala `isBotCompatible`: a game of a Swiss is
        # never bot-compatible (only arenas are left to their `botsAllowed` condition).
        raise ValueError(f"{text!r} is a Swiss tournament: lila does not let bots play "
                         "in Swiss tournaments, only in arenas that allow bots "
                         "(https://lichess.org/tournament/<id>)")
    arena_id = ARENA_URL_PREFIX.sub("", text.strip()).strip("/")
    if not ARENA_ID_PATTERN.fullmatch(arena_id):
        raise ValueError(f"{text!r} is not an arena id (8 letters and digits, or the "
                         "arena's URL https://lichess.org/tournament/<id>)")
    return arena_id


def _arenas(value: Any) -> tuple[ArenaEntry, ...]:
    if not isinstance(value, list):
        raise _Invalid("must be a list of arena ids, or of {id, team, password} mappings, "
                       f"{_got(value)}")
    entries: list[ArenaEntry] = []
    for item in value:
        raw = {"id": item} if isinstance(item, str) else item
        if not isinstance(raw, dict):
            raise _Invalid(f"each arena must be an id or a mapping, {_got(item)}")
        unknown = sorted(set(map(str, raw)) - set(ARENA_KEYS))
        if unknown:
            raise _Invalid(f"unknown arena key {unknown[0]!r}; allowed: {', '.join(ARENA_KEYS)}")
        if not isinstance(raw.get("id"), str):
            raise _Invalid(f"each arena needs an id, {_got(raw.get('id'))}")
        try:
            arena_id = parse_arena_id(raw["id"])
        except ValueError as error:
            raise _Invalid(str(error)) from None
        extra = {k: raw.get(k) for k in ("team", "password")}
        for key, text in extra.items():
            if text is not None and not (isinstance(text, str) and text.strip()):
                raise _Invalid(f"arena {arena_id}: {key} must be a non-empty text, "
                               f"{_got(text)}")
        if any(e.id == arena_id for e in entries):
            raise _Invalid(f"arena {arena_id} is listed twice")
        entries.append(ArenaEntry(arena_id, extra["team"], extra["password"]))
    return tuple(entries)


# --- declaring keys -----------------------------------------------------------------


def _check(check: Check) -> dict[str, Check]:
    """Field metadata of a scalar key: how its raw YAML value is checked.

    Fields without it are sections (nested dataclasses)."""
    return {"check": check}


def _key(default: T, check: Check) -> T:
    """A scalar key with an immutable default."""
    return field(default=default, metadata=_check(check))


def _key_factory(factory: Callable[[], T], check: Check) -> T:
    """A scalar key whose default is built per instance (a read-only mapping)."""
    return field(default_factory=factory, metadata=_check(check))


# --- the sections -------------------------------------------------------------------


@dataclass(frozen=True)
class EngineConfig:
    command: tuple[str, ...] | None = _key(None, _engine_command)
    protocol: str = _key("uci", _choice(*ENGINE_PROTOCOLS))
    options: Mapping[str, str | int | bool] = _key_factory(
        lambda: MappingProxyType({"Hash": 64}), _uci_options)
    move_overhead_s: float = _key(0.1, _number(0))
    first_move_s: float = _key(3.0, _number(0, exclusive_min=True))
    max_move_s: float | None = _key(None, _optional(_number(0, exclusive_min=True)))
    ponder: bool = _key(False, _boolean)
    spare: bool = _key(True, _boolean)
    fork_host: bool = _key(True, _boolean)
    # search threads of each game's engine (its UCI option Threads)
    threads: int = _key(1, _integer(1, what="a number of threads"))

    @property
    def search_threads(self) -> int:
        """The threads each game's engine searches with, the one reading of the setting that
        the pool, the memory estimate and the cores check share: `threads`, or a `Threads`
        among the options (configurations written before the key; the two together are
        refused)."""
        for name, value in self.options.items():
            if name.lower() == THREADS_OPTION.lower() and isinstance(value, int):
                return value
        return self.threads


ENGINE_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_-")


def _engine_name(value: Any) -> str:
    if not isinstance(value, str) or not value or not set(value) <= ENGINE_NAME_CHARS:
        raise _Invalid(f"must be an engine name (letters, digits, _ and -), {_got(value)}")
    return value


def _optional_bool(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _Invalid(f"must be true, false or null (either), {_got(value)}")
    return value


# Keyword-only: a rule record's own keys (its engine, its strength) stay its first
# positional arguments, and the conditions are always named.
@dataclass(frozen=True, kw_only=True)
class GameConditionsConfig:
    """The conditions on a game that `engines.rules` and `strength.rules` share, matched by
    bot/engines/rules.py `matches` (a condition left out, or null, matches every game)."""

    variants: tuple[str, ...] | None = _key(
        None, _optional(_choices(*PLAYABLE_VARIANTS, nonempty=True)))
    speeds: tuple[str, ...] | None = _key(None, _optional(_choices(*SPEEDS, nonempty=True)))
    rated: bool | None = _key(None, _optional_bool)
    bot: bool | None = _key(None, _optional_bool)  # the opponent is a BOT account
    arena: bool | None = _key(None, _optional_bool)  # the game belongs to an arena tournament
    # the opponent's Lichess rating in the game's perf (an unknown rating meets neither)
    min_rating: int | None = _key(None, _optional(_integer(0, what="a rating")))
    max_rating: int | None = _key(None, _optional(_integer(0, what="a rating")))


CONDITION_KEYS: Final = tuple(f.name for f in dataclasses.fields(GameConditionsConfig))


def _misordered(rule: object, pairs: tuple[tuple[str, str], ...], here: str,
                where: str) -> list[str]:
    """Each (lower, upper) pair of a rule's keys whose lower bound is above its upper."""
    problems = []
    for low, high in pairs:
        lower, upper = getattr(rule, low), getattr(rule, high)
        if None not in (lower, upper) and lower > upper:
            problems.append(f"{where}: {here}.{low}: must not be greater than {high} "
                            f"({lower} > {upper})")
    return problems


RATING_RANGE: Final = ("min_rating", "max_rating")


@dataclass(frozen=True)
class EngineRuleConfig(GameConditionsConfig):
    """One rule of `engines.rules`: its engine plays the games that meet every condition
    given."""

    engine: str = _key("", _engine_name)


@dataclass(frozen=True)
class EnginesConfig:
    """Several named engines and the rules that pick one per game (first match wins)."""

    default: str = ""
    entries: Mapping[str, EngineConfig] = field(default_factory=lambda: MappingProxyType({}))
    rules: tuple[EngineRuleConfig, ...] = ()


def _build_engines(raw: Any, prefix: str, where: str,
                   problems: list[str]) -> EnginesConfig | None:
    """`engines`: null (the `engine` section plays every game), or a mapping of `default`
    (an engine name), `entries` (engine names to sections like `engine`) and `rules`."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: {prefix}: must be null or a mapping of default, entries "
                        f"and rules, {_got(raw)}")
        return None
    allowed = ["default", "entries", "rules"]
    for name in raw:
        if name not in allowed:
            problems.append(f"{where}: {prefix}.{name}: unknown key"
                            f"{_suggest(str(name), allowed, prefix + '.')}")
    entries: dict[str, EngineConfig] = {}
    raw_entries = raw.get("entries")
    if not isinstance(raw_entries, dict) or not raw_entries:
        problems.append(f"{where}: {prefix}.entries: must be a mapping of engine names to "
                        f"engine sections (at least one), {_got(raw_entries)}")
        raw_entries = {}
    for name, section in raw_entries.items():
        try:
            _engine_name(name)
        except _Invalid as error:
            problems.append(f"{where}: {prefix}.entries: {error}")
            continue
        entries[name] = _build(EngineConfig, section, f"{prefix}.entries.{name}.", where,
                               problems)
    known = ", ".join(entries) or "none"
    default = raw.get("default")
    if default not in entries:
        problems.append(f"{where}: {prefix}.default: must name one of the entries "
                        f"({known}), {_got(default)}")
        default = ""
    rules: list[EngineRuleConfig] = []
    raw_rules = raw.get("rules", [])
    if not isinstance(raw_rules, list):
        problems.append(f"{where}: {prefix}.rules: must be a list of rules, {_got(raw_rules)}")
        raw_rules = []
    for index, raw_rule in enumerate(raw_rules):
        here = f"{prefix}.rules[{index}]"
        if not isinstance(raw_rule, dict) or "engine" not in raw_rule:
            problems.append(f"{where}: {here}: must be a mapping with an engine and its "
                            f"conditions ({', '.join(CONDITION_KEYS)}), {_got(raw_rule)}")
            continue
        rule = _build(EngineRuleConfig, raw_rule, here + ".", where, problems)
        if rule.engine and rule.engine not in entries:
            problems.append(f"{where}: {here}.engine: must name one of the entries "
                            f"({known}), {_got(rule.engine)}")
        problems += _misordered(rule, (RATING_RANGE,), here, where)
        rules.append(rule)
    return EnginesConfig(str(default), MappingProxyType(entries), tuple(rules))


@dataclass(frozen=True)
class ChallengeConfig:
    concurrency: int = _key(2, _integer(1, what="a number of games"))
    variants: tuple[str, ...] = _key(PLAYABLE_VARIANTS, _choices(*PLAYABLE_VARIANTS))
    speeds: tuple[str, ...] = _key(("bullet", "blitz", "rapid", "classical"), _choices(*SPEEDS))
    min_base_s: float = _key(0.0, _number(0))
    max_base_s: float = _key(10800.0, _number(0))
    min_increment_s: float = _key(0.0, _number(0))
    max_increment_s: float = _key(180.0, _number(0))
    accept_rated: bool = _key(True, _boolean)
    accept_casual: bool = _key(True, _boolean)
    accept_bots: bool = _key(True, _boolean)
    accept_humans: bool = _key(True, _boolean)
    block_list: tuple[str, ...] = _key((), _usernames)
    allow_list: tuple[str, ...] = _key((), _usernames)
    min_rating: int | None = _key(None, _optional(_integer(0, what="a rating")))
    max_rating: int | None = _key(None, _optional(_integer(0, what="a rating")))
    max_rating_diff: int | None = _key(None, _optional(_integer(0, what="a rating difference")))
    reserve_for_humans: int = _key(0, _integer(0, what="a number of games"))
    max_games_per_opponent: int | None = _key(
        None, _optional(_integer(1, what="a number of games")))
    max_recent_games_per_bot: int | None = _key(
        None, _optional(_integer(1, what="a number of games")))
    recent_window_s: float = _key(86400.0, _number(0, exclusive_min=True))
    online_block_lists: tuple[str, ...] = _key((), _urls)
    block_list_refresh_s: float = _key(3600.0, _number(60))
    sort: QueueOrder = _key("first", _choice(*QUEUE_ORDERS))  # noqa: RUF009 (a str)


@dataclass(frozen=True)
class MatchmakingConfig:
    enabled: bool = _key(False, _boolean)
    idle_s: float = _key(120.0, _number(0))
    challenge_timeout_s: float = _key(20.0, _number(1))
    time_controls: Mapping[str, float] = _key_factory(
        lambda: MappingProxyType({"3+2": 1.0, "5+3": 1.0}), _weights())
    variants: Mapping[str, float] = _key_factory(
        lambda: MappingProxyType({"standard": 1.0}), _weights(*MATCHMAKING_VARIANTS))
    modes: Mapping[str, float] = _key_factory(
        lambda: MappingProxyType({"rated": 1.0, "casual": 1.0}), _weights(*MATCHMAKING_MODES))
    min_rating_diff: int = _key(-300, _integer(what="a rating difference"))
    max_rating_diff: int = _key(300, _integer(what="a rating difference"))
    color: ChallengeColor = _key(  # noqa: RUF009 (a str)
        "alternate", _choice(*get_args(ChallengeColor)))
    backoff_s: float = _key(600.0, _number(0, exclusive_min=True))
    max_backoff_s: float = _key(86400.0, _number(0, exclusive_min=True))
    daily_challenges: int = _key(100, _integer(1, 200, what="a number of challenges"))
    block_list: tuple[str, ...] = _key((), _usernames)


@dataclass(frozen=True)
class CorrespondenceConfig:
    think_s: float = _key(30.0, _number(0, exclusive_min=True))
    checkin_interval_s: float = _key(600.0, _number(10))


@dataclass(frozen=True)
class GameConfig:
    abort_after_s: float = _key(30.0, _number(0, exclusive_min=True))
    claim_victory: bool = _key(True, _boolean)
    shutdown_grace_s: float = _key(60.0, _number(0))
    shutdown_action: ShutdownAction = _key(  # noqa: RUF009 (a str, immutable)
        "resign", _choice(*get_args(ShutdownAction)))


@dataclass(frozen=True)
class ChatConfig:
    kibitz_every: int = _key(1, _integer(0, what="a number of moves"))
    kibitz_rooms: tuple[str, ...] = _key(("spectator",), _choices(*CHAT_ROOMS))
    greeting_start: str = _key("Hi {opponent}, I am {me}, running {engine}. Good luck!",
                               _greeting)
    greeting_end: str = _key("Thanks for the game, {opponent}!", _greeting)
    greeting_rooms: tuple[str, ...] = _key(("player", "spectator"), _choices(*CHAT_ROOMS))
    eval_for_opponent: bool = _key(False, _boolean)


@dataclass(frozen=True)
class BookConfig:
    enabled: bool = _key(False, _boolean)
    books: Mapping[str, tuple[Path, ...]] = _key_factory(
        lambda: MappingProxyType({"standard": (), "chess960": ()}), _books)
    selection: str = _key("weighted_random",
                          _choice("best_move", "weighted_random", "uniform_random"))
    min_weight: int = _key(1, _integer(0))
    max_depth: int = _key(20, _integer(0, what="a number of plies"))
    # The book learned from the bot's own games (bot/features/learnbook.py), probed first.
    learn: bool = _key(False, _boolean)
    learn_min_games: int = _key(1, _integer(1, what="a number of games"))
    learn_max_plies: int = _key(20, _integer(1, what="a number of plies"))
    learn_memory_mb: int = _key(512, _integer(64, what="a size in MiB"))


@dataclass(frozen=True)
class TablebaseConfig:
    syzygy_paths: tuple[Path, ...] = _key((), _paths)
    variant_syzygy_paths: Mapping[str, tuple[Path, ...]] = _key_factory(
        lambda: MappingProxyType({}), _variant_paths(*SYZYGY_VARIANTS))
    quality: str = _key("best", _choice("best", "suggest"))


@dataclass(frozen=True)
class OnlineSourceConfig:
    enabled: bool = _key(False, _boolean)
    timeout_s: float = _key(2.0, _number(0, exclusive_min=True))
    max_misses: int = _key(3, _integer(0, what="a number of failed requests"))


@dataclass(frozen=True)
class CloudEvalConfig(OnlineSourceConfig):
    min_depth: int = _key(20, _integer(1, what="a search depth"))


@dataclass(frozen=True)
class OnlineTablebaseConfig(OnlineSourceConfig):
    max_pieces: int = _key(7, _integer(3, 7, what="a number of pieces"))


@dataclass(frozen=True)
class OnlineConfig:
    explorer: OnlineSourceConfig = field(default_factory=OnlineSourceConfig)
    cloud_eval: CloudEvalConfig = field(default_factory=CloudEvalConfig)
    online_tablebase: OnlineTablebaseConfig = field(default_factory=OnlineTablebaseConfig)


@dataclass(frozen=True)
class DrawConfig:
    offer: bool = _key(False, _boolean)
    accept: bool = _key(True, _boolean)
    margin_cp: int = _key(20, _integer(0, what="a score in centipawns"))
    moves: int = _key(10, _integer(1, what="a number of moves"))
    min_move: int = _key(30, _integer(0, what="a full-move number"))
    # No draw offered to an opponent rated below this (a beginner plays the game out).
    min_rating: int | None = _key(1000, _optional(_integer(0, what="a rating")))


@dataclass(frozen=True)
class ResignConfig:
    enabled: bool = _key(False, _boolean)
    threshold_cp: int = _key(-800, _integer(maximum=-1, what="a score in centipawns"))
    moves: int = _key(5, _integer(1, what="a number of moves"))
    # Never resign to an opponent rated below this (a beginner deserves the mate).
    min_rating: int | None = _key(1000, _optional(_integer(0, what="a rating")))


@dataclass(frozen=True)
class TakebackConfig:
    max_per_game: int = _key(0, _integer(0, what="a number of takebacks"))


@dataclass(frozen=True)
class PgnConfig:
    enabled: bool = _key(True, _boolean)
    dir: Path = field(default=Path("games"), metadata=_check(_path))
    grouping: str = _key("game", _choice("game", "opponent", "single"))


@dataclass(frozen=True)
class LogConfig:
    level: str = _key("info", _choice(*LOG_LEVELS))
    game_log: bool = _key(True, _boolean)
    game_log_dir: Path | None = field(default=None, metadata=_check(_optional(_path)))
    status_interval_s: float = _key(60.0, _number(0))
    live_view: LiveView = _key(  # noqa: RUF009 (a str)
        "auto", _choice(*get_args(LiveView)))


@dataclass(frozen=True)
class WatchConfig:
    """The status page, /metrics and /healthz (bot/watch)."""

    enabled: bool = _key(True, _boolean)
    host: str = _key("127.0.0.1", _text)
    port: int = _key(8740, _integer(0, 65535, what="a TCP port"))  # 0: any free one
    # Needed to bind beyond loopback; KIBITZ_WATCH_PASSWORD in the environment overrides it,
    # and a container's secret /run/secrets/watch-password stands in when neither is set.
    password: str | None = field(default=None, metadata=_check(_optional(_text)))


@dataclass(frozen=True)
class TournamentsConfig:
    arenas: tuple[ArenaEntry, ...] = _key((), _arenas)
    slots: int = _key(1, _integer(1, what="a number of games"))
    pause_matchmaking: bool = _key(True, _boolean)
    join_before_s: float = _key(600.0, _number(0))
    poll_interval_s: float = _key(15.0, _number(1))


@dataclass(frozen=True)
class OpeningsConfig:
    """The last games against each opponent, and the deviation from them in rated games
    (bot/features/pairings.py): lila leaves a rated bot game unrated when its first 20
    plies and winner repeat one of the pair's last two games."""

    memory: bool = _key(True, _boolean)
    memory_opponents: int = _key(1000, _integer(1, what="a number of opponents"))
    deviation_margin_cp: int = _key(30, _integer(0, 500, what="a score in centipawns"))


# --- strength: the level of each game (bot/engines/levels.py) -----------------------------

# Lichess speeds with an offset of their own; ultraBullet (no bot plays it) reads bullet's.
OFFSET_SPEEDS = ("bullet", "blitz", "rapid", "classical", "correspondence")
MAX_OFFSET = 1000  # an offset beyond a thousand points is a typo, not a mapping


def _level(value: Any) -> str:
    """A level as written (full, a number, opponent [+|- N]), kept as its normal text."""
    try:
        return str(parse_level(value))
    except ValueError as error:
        raise _Invalid(str(error)) from None


def _offsets(value: Any) -> Mapping[str, int]:
    """Speeds to offsets (Lichess rating + offset = UCI_Elo); speeds left out keep theirs."""
    allowed = f"a mapping of {', '.join(OFFSET_SPEEDS)} to rating offsets"
    if not isinstance(value, dict):
        raise _Invalid(f"must be {allowed}, {_got(value)}")
    offsets = dict(DEFAULT_LICHESS_OFFSET)
    for speed, offset in value.items():
        if speed not in OFFSET_SPEEDS:
            raise _Invalid(f"keys must be one of {', '.join(OFFSET_SPEEDS)}, {_got(speed)}")
        if isinstance(offset, bool) or not isinstance(offset, int) \
                or not -MAX_OFFSET <= offset <= MAX_OFFSET:
            raise _Invalid(f"offset of {speed} must be an integer from -{MAX_OFFSET} to "
                           f"{MAX_OFFSET}, {_got(offset)}")
        offsets[speed] = offset
    return MappingProxyType(offsets)


# Lichess rating + offset = the engine's UCI_Elo (CCRL's scale); README "Playing people at
# their level" gives the reasons for each.
DEFAULT_LICHESS_OFFSET: Final[Mapping[str, int]] = MappingProxyType({
    "bullet": -400, "blitz": -300, "rapid": -350, "classical": -400, "correspondence": -400})
SANDBAGGING = ("a rating must mean one strength: a bot that plays weaker against weaker "
               "opponents in rated games moves its own rating at will, and Lichess treats "
               "deliberate rating manipulation as sandbagging")


@dataclass(frozen=True)
class StrengthRuleConfig(GameConditionsConfig):
    """One rule of `strength.rules`: the level (and UCI options) of the games that meet every
    condition given (the engine that plays the game is one more condition)."""

    strength: str = _key("full", _level)
    min: int | None = _key(None, _optional(_integer(0, what="a UCI_Elo")))
    max: int | None = _key(None, _optional(_integer(0, what="a UCI_Elo")))
    options: Mapping[str, str | int | bool] = _key_factory(
        lambda: MappingProxyType({}), _uci_options)
    engine: str | None = _key(None, _optional(_engine_name))  # the engine that plays the game


# People in casual games at their level; every other game (rated, bots) at full strength.
DEFAULT_STRENGTH_RULES = (StrengthRuleConfig(strength="opponent", rated=False, bot=False),)


def _build_strength_rules(raw: Any, prefix: str, where: str,
                          problems: list[str]) -> tuple[StrengthRuleConfig, ...]:
    """`strength.rules`: a list of rules, each checked key by key, and refused when it lets
    the opponent's rating set the level of a rated game."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(f"{where}: {prefix}: must be a list of rules, {_got(raw)}")
        return ()
    rules = []
    for index, raw_rule in enumerate(raw):
        here = f"{prefix}[{index}]"
        if not isinstance(raw_rule, dict) or "strength" not in raw_rule:
            problems.append(f"{where}: {here}: must be a mapping with a strength and its "
                            f"conditions ({', '.join((*CONDITION_KEYS, 'engine'))}), "
                            f"{_got(raw_rule)}")
            continue
        before = len(problems)
        rule = _build(StrengthRuleConfig, raw_rule, here + ".", where, problems)
        if len(problems) > before:
            continue
        if parse_level(rule.strength).follows_opponent and rule.rated is not False:
            problems.append(f"{where}: {here}.strength: {rule.strength!r} follows the "
                            "opponent's rating, which only a casual game may do: this rule "
                            f"can match rated games (add rated: false); {SANDBAGGING}")
        problems += _misordered(rule, (("min", "max"), RATING_RANGE), here, where)
        rules.append(rule)
    return tuple(rules)


@dataclass(frozen=True)
class StrengthConfig:
    """The level each game is played at: the first rule that matches sets it, full strength
    when none does."""

    rules: tuple[StrengthRuleConfig, ...] = field(
        default=DEFAULT_STRENGTH_RULES, metadata={"build": _build_strength_rules})
    lichess_offset: Mapping[str, int] = _key_factory(lambda: DEFAULT_LICHESS_OFFSET, _offsets)

    def offset(self, speed: str) -> int:
        """The offset of a game's speed (ultraBullet: bullet's)."""
        return self.lichess_offset.get(speed, self.lichess_offset["bullet"])


@dataclass(frozen=True)
class Config:
    url: str = _key("https://lichess.org", _url)
    token_file: Path | None = field(default=None, metadata=_check(_optional(_path)))
    state_dir: Path = field(default=Path("state"), metadata=_check(_path))
    engine: EngineConfig = field(default_factory=EngineConfig)
    # null: the `engine` section plays every game
    engines: EnginesConfig | None = field(default=None, metadata={"build": _build_engines})
    strength: StrengthConfig = field(default_factory=StrengthConfig)
    challenge: ChallengeConfig = field(default_factory=ChallengeConfig)
    game: GameConfig = field(default_factory=GameConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    book: BookConfig = field(default_factory=BookConfig)
    openings: OpeningsConfig = field(default_factory=OpeningsConfig)
    tablebase: TablebaseConfig = field(default_factory=TablebaseConfig)
    online: OnlineConfig = field(default_factory=OnlineConfig)
    draw: DrawConfig = field(default_factory=DrawConfig)
    resign: ResignConfig = field(default_factory=ResignConfig)
    takeback: TakebackConfig = field(default_factory=TakebackConfig)
    pgn: PgnConfig = field(default_factory=PgnConfig)
    log: LogConfig = field(default_factory=LogConfig)
    matchmaking: MatchmakingConfig = field(default_factory=MatchmakingConfig)
    correspondence: CorrespondenceConfig = field(default_factory=CorrespondenceConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)

    tournaments: TournamentsConfig = field(default_factory=TournamentsConfig)


# Checks that span two keys: (path of the lower key, path of the upper key).
_ORDERED_PAIRS = (
    ("challenge.min_base_s", "challenge.max_base_s"),
    ("challenge.min_increment_s", "challenge.max_increment_s"),
    ("challenge.min_rating", "challenge.max_rating"),
    ("matchmaking.min_rating_diff", "matchmaking.max_rating_diff"),
    ("matchmaking.backoff_s", "matchmaking.max_backoff_s"),
)


# --- loading ------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key written twice in one mapping."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)  # type: ignore[no-untyped-call]
        if isinstance(key, str) and key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice (line {mark.line + 1})", mark)
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _is_section(f: dataclasses.Field[Any]) -> bool:
    return "check" not in f.metadata and "build" not in f.metadata


def all_key_paths(cls: type = Config, prefix: str = "") -> Iterator[str]:
    """Every leaf key of the configuration, as dotted paths ("challenge.min_base_s")."""
    for f in dataclasses.fields(cls):
        path = prefix + f.name
        if _is_section(f):
            yield from all_key_paths(_section_type(cls, f.name), path + ".")
        else:
            yield path


def _section_type(cls: type, name: str) -> type:
    """The dataclass of a section (annotations are strings here, the default is not)."""
    return type(getattr(cls(), name))


def _suggest(name: str, here: list[str], prefix: str) -> str:
    close = difflib.get_close_matches(name, here, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {prefix}{close[0]}?"
    elsewhere = [p for p in all_key_paths() if p.rsplit(".", 1)[-1] == name]
    if elsewhere:
        return f"; did you mean {elsewhere[0]}?"
    return f"; allowed here: {', '.join(here)}"


def _build(cls: type[T], raw: Any, prefix: str, where: str, problems: list[str]) -> T:
    """A section from its raw mapping: defaults for missing keys, problems collected."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        name = prefix.rstrip(".") or "the top level"
        problems.append(f"{where}: {name}: must be a mapping of keys, {_got(raw)}")
        return cls()
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for name in raw:
        if name not in fields:
            problems.append(f"{where}: {prefix}{name}: unknown key"
                            f"{_suggest(str(name), list(fields), prefix)}")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in raw:
            continue
        if "build" in f.metadata:  # a section of its own shape (engines)
            values[name] = f.metadata["build"](raw[name], f"{prefix}{name}", where, problems)
            continue
        if _is_section(f):
            values[name] = _build(_section_type(cls, name), raw[name], f"{prefix}{name}.",
                                  where, problems)
            continue
        try:
            values[name] = f.metadata["check"](raw[name])
        except _Invalid as error:
            problems.append(f"{where}: {prefix}{name}: {error}")
    return cls(**values)


def _lookup(config: Config, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def parse_config(text: str, where: str = "<config>") -> Config:
    """The configuration from YAML text; `where` names the source in error messages."""
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise ConfigError([f"{where}: not valid YAML: {error}"]) from None
    problems: list[str] = []
    config = _build(Config, raw, "", where, problems)
    problems += [f"{where}: {problem}" for problem in _threads_set_twice(config)]
    problems += [f"{where}: {problem}" for problem in _strength_engines_unknown(config)]
    for low, high in _ORDERED_PAIRS:
        if None not in (_lookup(config, low), _lookup(config, high)) \
                and _lookup(config, low) > _lookup(config, high):
            problems.append(f"{where}: {low}: must not be greater than {high} "
                            f"({_lookup(config, low):g} > {_lookup(config, high):g})")
    if problems:
        raise ConfigError(problems)
    return config


def _threads_set_twice(config: Config) -> list[str]:
    """Each engine section that sets both `threads` and a `Threads` option."""
    sections = [("engine", config.engine)]
    if config.engines is not None:
        sections += [(f"engines.entries.{name}", entry)
                     for name, entry in config.engines.entries.items()]
    return [f"{key}.threads: set the threads here or as options.Threads, not both"
            for key, engine in sections
            if engine.threads != 1 and any(name.lower() == THREADS_OPTION.lower()
                                           for name in engine.options)]


def _strength_engines_unknown(config: Config) -> list[str]:
    """Each strength rule naming an engine no game is played on."""
    names = list(config.engines.entries) if config.engines is not None else ["engine"]
    return [f"strength.rules[{index}].engine: must name one of the engines "
            f"({', '.join(names)}), {_got(rule.engine)}"
            for index, rule in enumerate(config.strength.rules)
            if rule.engine is not None and rule.engine not in names]


def load_config(path: Path | None) -> Config:
    """The configuration in `path`, or the documented defaults when `path` is None."""
    if path is None:
        return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such configuration file"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot be read: {error}"]) from None
    return parse_config(text, str(path))


def to_plain(value: Any) -> Any:
    """The configuration as plain YAML-ready data (the inverse of loading)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [to_plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def dump_config(config: Config) -> str:
    """The effective configuration as YAML (no secrets: the token is not part of it)."""
    return yaml.safe_dump(to_plain(config), sort_keys=False, default_flow_style=False,
                          allow_unicode=True)
