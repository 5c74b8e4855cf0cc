"""`kibitz check-config` checks the `engines` rules: unknown names, rules that never match,
engine programs not found, and variants a rule's engine does not declare (it starts it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot import cli
from bot.cli import ExitCode
from bot.ops.token import TOKEN_ENV
from tests.bot.e2e_support import FAKE_ENGINE

# The test engine declares the variants it is given, and none without.
STANDARD_ONLY = f'["{sys.executable}", "{FAKE_ENGINE}", "none", "0"]'
PLAYS_ATOMIC = f'["{sys.executable}", "{FAKE_ENGINE}", "none", "0", "atomic"]'


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    config = tmp_path / "engines.yml"
    config.write_text(text)
    code = cli.run(["check-config", "--config", str(config)])
    return code, capsys.readouterr().out


def test_sound_rules_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, f"""
engines:
  default: plain
  entries: {{plain: {{command: {STANDARD_ONLY}}}, boom: {{command: {PLAYS_ATOMIC}}}}}
  rules: [{{engine: boom, variants: [atomic]}}]
""", capsys)
    assert "# problem" not in out
    assert code == ExitCode.OK


def test_a_rule_that_never_matches_and_a_missing_program(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, f"""
engines:
  default: plain
  entries: {{plain: {{command: {STANDARD_ONLY}}}, gone: {{command: no-such-engine-here}}}}
  rules: [{{engine: plain}}, {{engine: gone, speeds: [bullet]}}]
""", capsys)
    assert code == ExitCode.CONFIG
    assert "# problem: engines.entries.gone.command: cannot find the program " \
           "'no-such-engine-here'" in out
    assert "# problem: engines.rules[1] (engine gone) never matches: every game it matches " \
           "is taken by engines.rules[0] (engine plain) first" in out


def test_a_variant_the_engine_does_not_declare(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, f"""
engines:
  default: plain
  entries: {{plain: {{command: {STANDARD_ONLY}}}}}
  rules: [{{engine: plain, variants: [atomic, chess960]}}]
""", capsys)
    assert code == ExitCode.CONFIG
    assert "# problem: engines.rules[0] (engine plain): the engine does not play atomic " \
           "(it plays chess960, fromPosition, standard)" in out


def test_an_unknown_engine_name_is_a_configuration_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "engines.yml"
    config.write_text("engines: {default: a, entries: {a: {}}, rules: [{engine: fairy}]}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.CONFIG
    assert "engines.rules[0].engine: must name one of the entries (a), got 'fairy'" \
        in capsys.readouterr().err


def test_an_engine_section_beside_engines_is_said_to_be_unused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, f"""
engine: {{ponder: true}}
engines: {{default: plain, entries: {{plain: {{command: {STANDARD_ONLY}}}}}}}
""", capsys)
    assert code == ExitCode.OK
    assert "# warning: engine: not used while engines is set" in out
