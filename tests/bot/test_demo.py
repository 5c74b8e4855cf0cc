"""`kibitz demo`: one whole watched game on the in-process sandbox, and its options."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import chess.pgn
import pytest

from bot.demo import DemoError, demo_config, parse_clock, run_demo
from bot.ops.config import Config
from tests.bot.e2e_support import make_config


@pytest.mark.parametrize(("text", "clock"), [
    ("1+1", (60, 1)), ("2+0", (120, 0)), ("0.5+2", (30, 2)), ("3", (180, 0)),
])
def test_clocks(text: str, clock: tuple[int, int]) -> None:
    assert parse_clock(text) == clock


@pytest.mark.parametrize("text", ["fast", "1+x", "0+0", "45+0", "1+90", "-1+1"])
def test_bad_clocks(text: str) -> None:
    with pytest.raises(DemoError, match=re.escape(f"--clock {text!r}")):
        parse_clock(text)


def test_demo_config_fits_one_watched_game(tmp_path: Path) -> None:
    config = demo_config(Config(), tmp_path)
    assert config.pgn.dir == tmp_path and config.pgn.enabled
    assert config.game.shutdown_grace_s == 0
    assert config.log.live_view == "never" and config.log.status_interval_s == 0
    assert config.chat.kibitz_every == 1 and "spectator" in config.chat.kibitz_rooms
    assert config.engine == Config().engine
    assert demo_config(Config(), None).pgn.dir == Config().pgn.dir


async def test_a_whole_demo_game(tmp_path: Path) -> None:
    shown = io.StringIO()
    config = make_config(tmp_path, strength="{}")  # the default rules: the demo's level
    code = await run_demo(config, clock="0.5+0", games_dir=tmp_path / "pgn", out=shown,
                          install_logging=False)
    text = shown.getvalue()
    assert code == 0, text
    assert "Kibitz demo: a local sandbox server is running at http://127.0.0.1:" in text
    # a person of 1,200, casual, bullet: the default rules' 1200 - 400
    assert "'sparring' is a person rated 1200 and the game is casual: the strength rules give " \
        "it Elo 800" in text
    assert re.search(r"Game \w{8}: (kibitz|sparring) \(white\) vs (kibitz|sparring) \(black\)",
                     text)
    moves = re.findall(r"^  (\d+\.(?:\.\.)? \S+) +(kibitz|sparring) +(\d+:\d\d(?:\.\d)?)$",
                       text, re.MULTILINE)
    assert len(moves) >= 4, text
    assert {mover for _, mover, _ in moves} == {"kibitz", "sparring"}
    kibitz_lines = re.findall(r"^      kibitz \(spectator\): (depth .*)$", text, re.MULTILINE)
    assert kibitz_lines and all(" | PV " in line for line in kibitz_lines), text
    result = re.search(r"^Result: (1-0|0-1|1/2-1/2|no result), (.*)$", text, re.MULTILINE)
    assert result, text
    where = re.search(r"^The game's PGN is in (.*)$", text, re.MULTILINE)
    assert where, text
    path = Path(where.group(1))
    assert path.parent == tmp_path / "pgn"
    game = chess.pgn.read_game(io.StringIO(await asyncio.to_thread(path.read_text)))
    assert game is not None
    assert len(list(game.mainline_moves())) == len(moves)
    assert game.headers["Result"] == result.group(1).replace("no result", "*")
    _kibitz_lines_follow_their_moves(text)


def _kibitz_lines_follow_their_moves(text: str) -> None:
    """Each kibitz line comes after the bot's move its PV starts with; usually right below."""
    lines = text.splitlines()
    moves = {}
    directly_below = 0
    for index, line in enumerate(lines):
        played = re.match(r"^  (\d+)(\.|\.\.\.) (\S+) +kibitz ", line)
        if played:
            number, dots, san = played.groups()
            moves[f"{number}. {san}" if dots == "." else f"{number}...{san}"] = index
        said = re.search(r"^      kibitz \(spectator\): .* PV (\d+\.(?: |\.\.)\S+)", line)
        if said:
            assert said.group(1) in moves, f"kibitz line before its move: {line}"
            directly_below += moves[said.group(1)] == index - 1
    assert directly_below >= 1
