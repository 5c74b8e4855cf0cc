"""The `tournaments` section: arena ids, URLs, team and password, and the errors."""

from __future__ import annotations

import pytest

from bot.ops.config import ArenaEntry, ConfigError, parse_config


def test_arenas_are_ids_urls_or_mappings() -> None:
    config = parse_config("""
tournaments:
  arenas:
    - AbCd1234
    - https://lichess.org/tournament/XyZ98765
    - {id: Team4567, team: kibitz-fans, password: secret}
  slots: 2
  pause_matchmaking: false
""")
    assert config.tournaments.arenas == (
        ArenaEntry("AbCd1234"), ArenaEntry("XyZ98765"),
        ArenaEntry("Team4567", "kibitz-fans", "secret"))
    assert config.tournaments.slots == 2
    assert config.tournaments.pause_matchmaking is False


@pytest.mark.parametrize(("arenas", "message"), [
    ("[AbCd]", "'AbCd' is not an arena id (8 letters and digits"),
    ("[{id: AbCd1234, pasword: x}]", "unknown arena key 'pasword'; allowed: id, team, password"),
    ("[{team: x}]", "each arena needs an id"),
    ("[AbCd1234, AbCd1234]", "arena AbCd1234 is listed twice"),
    ("[{id: AbCd1234, team: ''}]", "arena AbCd1234: team must be a non-empty text"),
    ("[3]", "each arena must be an id or a mapping"),
    # lila's Game.isBotCompatible: a Swiss game never is; said so, not "not an arena id".
    ("['https://lichess.org/swiss/AbCd1234']",
     "is a Swiss tournament: lila does not let bots play in Swiss tournaments"),
    ("[{id: 'lichess.org/swiss/AbCd1234'}]", "is a Swiss tournament"),
])
def test_bad_arenas_are_named(arenas: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f"tournaments:\n  arenas: {arenas}\n", "bot.yml")
    assert "bot.yml: tournaments.arenas: " in str(caught.value)
    assert message in str(caught.value)


def test_slots_and_poll_interval_are_checked() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("tournaments:\n  slots: 0\n  poll_interval_s: 0.1\n", "bot.yml")
    assert "tournaments.slots" in str(caught.value)
    assert "tournaments.poll_interval_s" in str(caught.value)
