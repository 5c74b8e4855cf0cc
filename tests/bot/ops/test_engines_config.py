"""The `engines` section: several named engines and the rules that pick one per game."""

from __future__ import annotations

import pytest

from bot.ops.config import (
    Config,
    ConfigError,
    EngineConfig,
    EngineRuleConfig,
    dump_config,
    parse_config,
)

EXAMPLE = """
engines:
  default: builtin
  entries:
    builtin: {}
    fairy: {command: fairy-stockfish, options: {Hash: 128}}
    bullet: {move_overhead_s: 0.3}
  rules:
    - {engine: fairy, variants: [atomic, crazyhouse]}
    - {engine: bullet, speeds: [bullet], rated: true, bot: false, arena: null}
"""


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "my.yml")
    return caught.value.problems


def test_absent_means_the_single_engine_section() -> None:
    assert Config().engines is None
    assert parse_config("engine: {ponder: true}\n").engines is None


def test_the_example_is_read_into_typed_entries_and_rules() -> None:
    engines = parse_config(EXAMPLE).engines
    assert engines is not None
    assert engines.default == "builtin"
    assert list(engines.entries) == ["builtin", "fairy", "bullet"]
    assert engines.entries["builtin"] == EngineConfig()  # each entry has engine's defaults
    assert engines.entries["fairy"].command == ("fairy-stockfish",)
    assert engines.entries["fairy"].options == {"Hash": 128}
    assert engines.entries["bullet"].move_overhead_s == 0.3
    assert engines.rules == (
        EngineRuleConfig("fairy", variants=("atomic", "crazyhouse")),
        EngineRuleConfig("bullet", speeds=("bullet",), rated=True, bot=False),
    )
    with pytest.raises(TypeError):
        engines.entries["x"] = EngineConfig()  # type: ignore[index]  # on purpose: read-only


def test_dump_round_trips() -> None:
    config = parse_config(EXAMPLE)
    assert parse_config(dump_config(config)) == config


def test_a_rule_may_ask_for_the_opponent_s_rating_range() -> None:
    engines = parse_config(
        "engines: {default: a, entries: {a: {}, b: {}},"
        " rules: [{engine: b, min_rating: 1200, max_rating: 1800}, {engine: a, min_rating: 0},"
        " {engine: b, max_rating: 900, bot: false}]}").engines
    assert engines is not None
    assert engines.rules == (
        EngineRuleConfig("b", min_rating=1200, max_rating=1800),
        EngineRuleConfig("a", min_rating=0),
        EngineRuleConfig("b", max_rating=900, bot=False),
    )


@pytest.mark.parametrize(("text", "expected"), [
    ("engines: [a]", "engines: must be null or a mapping of default, entries and rules, "
     "got ['a']"),
    ("engines: {default: a}", "engines.entries: must be a mapping of engine names to engine "
     "sections (at least one), got None"),
    ("engines: {default: b, entries: {a: {}}}",
     "engines.default: must name one of the entries (a), got 'b'"),
    ("engines: {default: a, entries: {a: {protocol: cecp}}}",
     "engines.entries.a.protocol: must be one of uci, xboard, got 'cecp'"),
    ("engines: {default: a, entries: {a: {pondering: true}}}",
     "engines.entries.a.pondering: unknown key; did you mean engines.entries.a.ponder?"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: b}]}",
     "engines.rules[0].engine: must name one of the entries (a), got 'b'"),
    ("engines: {default: a, entries: {a: {}}, rules: [{variants: [atomic]}]}",
     "engines.rules[0]: must be a mapping with an engine and its conditions (variants, "
     "speeds, rated, bot, arena, min_rating, max_rating), got {'variants': ['atomic']}"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, min_rating: -5}]}",
     "engines.rules[0].min_rating: must be a rating >= 0, got -5"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, max_rating: '1800'}]}",
     "engines.rules[0].max_rating: must be a rating >= 0, got '1800'"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, min_rating: 1800, "
     "max_rating: 1200}]}",
     "engines.rules[0].min_rating: must not be greater than max_rating (1800 > 1200)"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, max_ratng: 1200}]}",
     "engines.rules[0].max_ratng: unknown key; did you mean engines.rules[0].max_rating?"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, variant: [atomic]}]}",
     "engines.rules[0].variant: unknown key; did you mean engines.rules[0].variants?"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, speeds: [slow]}]}",
     "engines.rules[0].speeds: must be a list of ultraBullet, bullet, blitz, rapid, "
     "classical, correspondence (at least one); 'slow' is not one of them"),
    ("engines: {default: a, entries: {a: {}}, rules: [{engine: a, rated: 'yes'}]}",
     "engines.rules[0].rated: must be true, false or null (either), got 'yes'"),
    ("engines: {default: a, entries: {a: {}}, rules: {engine: a}}",
     "engines.rules: must be a list of rules, got {'engine': 'a'}"),
    ("engines: {default: a, entries: {a: {}}, order: []}",
     "engines.order: unknown key; allowed here: default, entries, rules"),
    ("engines: {default: 'a b', entries: {'a b': {}}}",
     "engines.entries: must be an engine name (letters, digits, _ and -), got 'a b'"),
])
def test_bad_engines_name_the_key_and_what_is_allowed(text: str, expected: str) -> None:
    assert expected in [problem.removeprefix("my.yml: ") for problem in _errors(text)]
