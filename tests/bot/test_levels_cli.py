"""`kibitz check-config` and the levels: it refuses a level that follows the opponent in a rule
that can match rated games, and prints the level a 1,200, 1,600 and 2,000 opponent gets in
each speed under the configured rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot import cli
from bot.cli import ExitCode
from bot.ops.token import TOKEN_ENV


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    config = tmp_path / "levels.yml"
    config.write_text(text)
    code = cli.run(["check-config", "--config", str(config)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def table(out: str) -> dict[str, list[str]]:
    """The level table's rows: "blitz person, casual" -> the levels at 1200, 1600, 2000."""
    start = out.index("# levels by the strength rules")
    rows = {}
    for line in out[start:].splitlines()[2:]:
        if not line.startswith("#   "):
            break
        words = line.removeprefix("#").split()
        rows[" ".join(words[:3])] = words[3:]
    return rows


def test_a_relative_level_that_can_match_rated_games_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, "strength: {rules: [{strength: opponent + 100, bot: false}]}\n",
                      capsys)
    assert code == ExitCode.CONFIG
    assert "strength.rules[0].strength: 'opponent + 100' follows the opponent's rating" in out
    assert "can match rated games (add rated: false)" in out
    assert "Lichess treats deliberate rating manipulation as sandbagging" in out


def test_the_default_levels_in_each_speed(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, "{}\n", capsys)
    assert code == ExitCode.OK
    rows = table(out)
    assert rows["blitz person, casual"] == ["900", "1300", "1700"]
    assert rows["bullet person, casual"] == ["800", "1200", "1600"]
    assert rows["correspondence person, casual"] == ["800", "1200", "1600"]
    for speed in ("bullet", "blitz", "rapid", "classical", "correspondence"):
        assert rows[f"{speed} person, rated"] == ["full"] * 3
        assert rows[f"{speed} bot, casual"] == ["full"] * 3


def test_the_levels_follow_the_configured_rules(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(tmp_path, """
strength:
  rules:
    - {strength: opponent + 100, rated: false, bot: false, min: 1000, max: 1500}
    - {strength: 2200, bot: false, min_rating: 1500}
    - {strength: 1800, speeds: [bullet]}
  lichess_offset: {rapid: -200}
""", capsys)
    assert code == ExitCode.OK
    rows = table(out)
    assert rows["rapid person, casual"] == ["1100", "1500", "1500"]
    assert rows["blitz person, casual"] == ["1000", "1400", "1500"]
    assert rows["blitz person, rated"] == ["full", "2200", "2200"]
    assert rows["bullet person, rated"] == ["1800", "2200", "2200"]
    assert rows["bullet bot, rated"] == ["1800", "1800", "1800"]
    assert rows["classical bot, rated"] == ["full", "full", "full"]
