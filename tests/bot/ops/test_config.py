"""config.yml and the Config dataclasses: defaults, agreement, and error messages."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.ops.config import (
    Config,
    ConfigError,
    all_key_paths,
    dump_config,
    load_config,
    parse_config,
    to_plain,
)

ROOT_CONFIG = Path(__file__).resolve().parents[3] / "config.yml"
KNOWN_KEYS = set(all_key_paths())


def _leaves(raw: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The file's keys as dotted paths; mapping-valued keys (engine.options) are leaves."""
    leaves: dict[str, Any] = {}
    for name, value in raw.items():
        path = prefix + name
        if isinstance(value, dict) and path not in KNOWN_KEYS:
            leaves.update(_leaves(value, path + "."))
        else:
            leaves[path] = value
    return leaves


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "my.yml")
    return caught.value.problems


def test_no_arguments_means_documented_defaults() -> None:
    assert load_config(None) == Config()
    assert load_config(ROOT_CONFIG) == Config()


def test_every_key_in_the_file_is_known_and_every_known_key_is_in_the_file() -> None:
    in_file = _leaves(yaml.safe_load(ROOT_CONFIG.read_text()))
    assert set(in_file) - KNOWN_KEYS == set(), "keys in config.yml the program does not know"
    assert KNOWN_KEYS - set(in_file) == set(), "keys the program knows missing from config.yml"
    defaults = _leaves(to_plain(Config()))
    for path, value in in_file.items():
        assert value == defaults[path], f"{path}: file {value!r}, default {defaults[path]!r}"


def test_every_key_in_the_file_has_a_comment() -> None:
    lines = ROOT_CONFIG.read_text().splitlines()
    node = yaml.compose(ROOT_CONFIG.read_text())

    def walk(mapping: yaml.MappingNode, prefix: str) -> None:
        for key_node, value_node in mapping.value:
            path = prefix + key_node.value
            if isinstance(value_node, yaml.MappingNode) and path not in KNOWN_KEYS:
                walk(value_node, path + ".")
                continue
            line = lines[key_node.start_mark.line]
            assert "#" in line.split(":", 1)[1], f"{path} has no comment in config.yml"

    assert isinstance(node, yaml.MappingNode)
    walk(node, "")


def test_dump_round_trips() -> None:
    config = parse_config("challenge: {concurrency: 5, block_list: [Spammer]}\n"
                          "engine: {command: [stockfish, --flag], options: {Threads: 1}}\n"
                          "book: {books: {standard: [a.bin, b.bin]}}\n")
    assert parse_config(dump_config(config)) == config
    assert config.challenge.block_list == ("spammer",)
    assert config.engine.command == ("stockfish", "--flag")
    assert config.book.books["standard"] == (Path("a.bin"), Path("b.bin"))


def test_the_documented_example_message() -> None:
    assert _errors("challenge:\n  min_base_s: fast\n") == [
        "my.yml: challenge.min_base_s: must be a number of seconds >= 0, got 'fast'"]


def test_unknown_keys_get_a_did_you_mean() -> None:
    problems = _errors("challenge: {concurency: 3}\nconcurrency: 4\nchalenge: {}\nzzz: 1\n")
    assert "my.yml: challenge.concurency: unknown key; did you mean challenge.concurrency?" \
        in problems
    assert "my.yml: concurrency: unknown key; did you mean challenge.concurrency?" in problems
    assert "my.yml: chalenge: unknown key; did you mean challenge?" in problems
    [zzz] = [p for p in problems if p.startswith("my.yml: zzz:")]
    assert "allowed here: url, token_file, state_dir, engine" in zzz


def test_all_problems_are_reported_together() -> None:
    problems = _errors("game: {shutdown_action: explode, abort_after_s: 0}\n"
                       "chat: {kibitz_rooms: [lobby], kibitz_every: -1}\n"
                       "log: {level: loud}\n")
    assert problems == [
        "my.yml: game.abort_after_s: must be a number of seconds > 0, got 0",
        "my.yml: game.shutdown_action: must be one of resign, abandon, got 'explode'",
        "my.yml: chat.kibitz_every: must be a number of moves >= 0, got -1",
        "my.yml: chat.kibitz_rooms: must be a list of player, spectator; "
        "'lobby' is not one of them",
        "my.yml: log.level: must be one of debug, info, warning, error, critical, got 'loud'",
    ]


@pytest.mark.parametrize(("text", "expected"), [
    ("challenge: {concurrency: true}",
     "challenge.concurrency: must be a number of games >= 1, got True"),
    ("challenge: {concurrency: 1.5}",
     "challenge.concurrency: must be a number of games >= 1, got 1.5"),
    ("challenge: {variants: [atomic, suicide]}",
     "challenge.variants: must be a list of standard, chess960, fromPosition, antichess, "
     "atomic, crazyhouse, horde, kingOfTheHill, racingKings, threeCheck; "
     "'suicide' is not one of them"),
    ("challenge: {speeds: blitz}",
     "challenge.speeds: must be a list of ultraBullet, bullet, blitz, rapid, classical, "
     "correspondence, got 'blitz'"),
    ("challenge: {speeds: [blitz, blitz]}",
     "challenge.speeds: must be a list of ultraBullet, bullet, blitz, rapid, classical, "
     "correspondence without repeats, got ['blitz', 'blitz']"),
    ("challenge: {min_base_s: 600, max_base_s: 60}",
     "challenge.min_base_s: must not be greater than challenge.max_base_s (600 > 60)"),
    ("challenge: {block_list: [ok, 7]}",
     "challenge.block_list: must be a list of user names, got ['ok', 7]"),
    ("challenge: {max_increment_s: .nan}",
     "challenge.max_increment_s: must be a number of seconds >= 0, got nan"),
    ("url: lichess.org", "url: must be an http:// or https:// URL, got 'lichess.org'"),
    ("url: 'https:///x'", "url: must be an http:// or https:// URL with a host name, "
     "got 'https:///x'"),
    ("token_file: ''", "token_file: must be a file or directory path, got ''"),
    ("engine: {command: []}",
     "engine.command: must be null (the built-in engine), a program path, or a list of "
     "program and arguments, got []"),
    ("engine: {options: {Hash: [1]}}",
     "engine.options: option 'Hash' must be an integer, text or true/false, got [1]"),
    ("engine: {ponder: 'yes'}", "engine.ponder: must be true or false, got 'yes'"),
    ("engine: {protocol: cecp}", "engine.protocol: must be one of uci, xboard, got 'cecp'"),
    ("engine: {options: {Hash: 64.5}}",
     "engine.options: option 'Hash' must be an integer, text or true/false, got 64.5"),
    ("chat: {greeting_start: 'Hi {user}'}",
     "chat.greeting_start: may use only the placeholders {me}, {opponent}, {engine}, "
     "{strength}, got {user}"),
    ("chat: {greeting_end: 'bye {'}",
     "chat.greeting_end: must be a valid template (Single '{' encountered in format string; "
     "write {{ for a literal brace), got 'bye {'"),
    ("book: {books: {giveaway: [a.bin]}}",
     "book.books: variants must be one of standard, chess960, fromPosition, antichess, "
     "atomic, crazyhouse, horde, kingOfTheHill, racingKings, threeCheck, got 'giveaway'"),
    ("book: {books: {standard: a.bin}}",
     "book.books: standard: must be a list of paths, got 'a.bin'"),
    ("resign: {threshold_cp: 100}",
     "resign.threshold_cp: must be a score in centipawns <= -1, got 100"),
    ("online: {online_tablebase: {max_pieces: 8}}",
     "online.online_tablebase.max_pieces: must be a number of pieces >= 3 and <= 7, got 8"),
    ("online: {cloud_eval: {timeout: 1}}",
     "online.cloud_eval.timeout: unknown key; did you mean online.cloud_eval.timeout_s?"),
    ("online: {explorer: true}", "online.explorer: must be a mapping of keys, got True"),
    ("pgn: {grouping: month}",
     "pgn.grouping: must be one of game, opponent, single, got 'month'"),
])
def test_bad_values_name_the_key_and_what_is_allowed(text: str, expected: str) -> None:
    assert _errors(text) == ["my.yml: " + expected]


def test_file_level_problems(tmp_path: Path) -> None:
    assert _errors("- a list\n") == [
        "my.yml: the top level: must be a mapping of keys, got ['a list']"]
    [duplicate] = _errors("draw: {offer: true}\ndraw: {offer: false}\n")
    assert duplicate.startswith("my.yml: not valid YAML: key 'draw' appears twice (line 2)")
    [broken] = _errors("draw: [\n")
    assert broken.startswith("my.yml: not valid YAML:")
    missing = tmp_path / "nope.yml"
    with pytest.raises(ConfigError, match=r"nope\.yml: no such configuration file"):
        load_config(missing)
    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match=r"binary\.yml: cannot be read"):
        load_config(binary)


def test_an_empty_file_or_section_means_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yml"
    empty.write_text("# nothing here\n")
    assert load_config(empty) == Config()
    assert parse_config("engine:\nchat:\n") == Config()


def test_partial_sections_keep_the_other_defaults() -> None:
    config = parse_config("game: {shutdown_grace_s: 5}\nurl: http://127.0.0.1:8080/\n")
    assert config.game.shutdown_grace_s == 5.0
    assert isinstance(config.game.shutdown_grace_s, float)
    assert config.game.shutdown_action == "resign"
    assert config.url == "http://127.0.0.1:8080"
    assert config.challenge == Config().challenge


def test_config_is_frozen_and_hashless_mappings_are_read_only() -> None:
    config = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.url = "http://example.org"  # type: ignore[misc]  # on purpose: frozen
    with pytest.raises(TypeError):
        config.engine.options["Hash"] = 1  # type: ignore[index]  # on purpose: read-only


def test_the_readme_documents_every_key_with_its_default() -> None:
    readme = (ROOT_CONFIG.parent / "README.md").read_text()
    start = readme.index("\n## Configuration\n")
    end = readme.index("\n## ", start + 1)
    rows = re.findall(r"^\| `([\w.]+)` \| `(.*?)` \|", readme[start:end], re.MULTILINE)
    documented = {key: yaml.safe_load(default.replace("\\|", "|")) for key, default in rows}
    missing = sorted(KNOWN_KEYS - set(documented))
    assert not missing, f"keys missing from the README's Configuration section: {missing}"
    defaults = _leaves(to_plain(Config()))
    wrong = {key: value for key, value in documented.items() if value != defaults.get(key)}
    assert not wrong, f"README defaults that differ from the program's: {wrong}"
