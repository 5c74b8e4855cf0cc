"""`kibitz tournament join|withdraw|list`: requests through the state directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import ExitCode, run
from bot.tournaments.control import ControlDir, TournamentCommand


def config_file(tmp_path: Path) -> str:
    path = tmp_path / "bot.yml"
    path.write_text(f'state_dir: "{tmp_path / "state"}"\n')
    return str(path)


def test_join_and_withdraw_are_queued_for_the_service(tmp_path: Path) -> None:
    config = config_file(tmp_path)
    assert run(["tournament", "join", "https://lichess.org/tournament/AbCd1234",
                "--team", "fans", "--config", config]) == ExitCode.OK
    assert run(["tournament", "withdraw", "AbCd1234", "--config", config]) == ExitCode.OK
    assert ControlDir(tmp_path / "state").take() == [
        TournamentCommand("join", "AbCd1234", team="fans"),
        TournamentCommand("withdraw", "AbCd1234")]


def test_bad_requests_are_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_file(tmp_path)
    assert run(["tournament", "join", "nope", "--config", config]) == ExitCode.USAGE
    assert "'nope' is not an arena id" in capsys.readouterr().err
    assert run(["tournament", "join", "--config", config]) == ExitCode.USAGE
    assert "which arena?" in capsys.readouterr().err
    assert not (tmp_path / "state" / "tournaments" / "requests").exists()


def test_list_shows_what_the_service_published(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = config_file(tmp_path)
    assert run(["tournament", "list", "--config", config]) == ExitCode.OK
    assert "no arenas known" in capsys.readouterr().out
    ControlDir(tmp_path / "state").publish([])
    assert run(["tournament", "list", "--config", config]) == ExitCode.OK
    assert capsys.readouterr().out == "the bot plays no arenas now\n"
    ControlDir(tmp_path / "state").publish([{
        "id": "AbCd1234", "name": "Hourly Bullet", "status": "started", "rank": 3,
        "score": 12, "games": 5, "seconds_to_finish": 754, "withdrawn": False,
        "problem": None}])
    assert run(["tournament", "list", "--config", config]) == ExitCode.OK
    assert capsys.readouterr().out.strip() == (
        "AbCd1234  Hourly Bullet  started  rank 3  12 points in 5 games  12:34 left")
    (tmp_path / "state" / "tournaments" / "status.json").write_text("{")
    assert run(["tournament", "list", "--config", config]) == ExitCode.ERROR
