"""`book.learn`: the learned book rebuilt in a process of its own when no game runs, once a
day at most, within its memory bound, and probed first."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import chess
import pytest

from bot.cli import ExitCode
from bot.cli import run as kibitz
from bot.features.learning import REBUILD_INTERVAL_S, BookLearner, LearnedBookSource
from bot.features.wiring import Features
from bot.ops.config import Config, parse_config
from tests.bot.features.test_movesource import CONTEXT

DATA = Path(__file__).resolve().parents[2] / "data" / "learn"


class Clock:
    def __init__(self) -> None:
        self.now_s = 1_000_000.0

    def __call__(self) -> float:
        return self.now_s


def learning_config(tmp_path: Path, games: str = "kibitz_games.pgn") -> Config:
    records = tmp_path / "games"
    records.mkdir(exist_ok=True)
    shutil.copy(DATA / games, records / "one.pgn")
    return parse_config(f"""
state_dir: "{tmp_path / 'state'}"
pgn: {{dir: "{records}"}}
book: {{learn: true, selection: best_move}}
""")


async def test_the_book_is_rebuilt_when_no_game_runs_and_once_a_day(tmp_path: Path) -> None:
    clock = Clock()
    learner = BookLearner(learning_config(tmp_path), clock=clock)
    source = LearnedBookSource(learner)
    try:
        assert learner.book is None and await source.choose(chess.Board(), CONTEXT) is None
        learner.game_started("g1")
        assert learner.maybe_rebuild() is None  # a game runs
        learner.account = "MyBot"  # as a game's context names it: games without Annotator
        shutil.copy(DATA / "added.pgn", learner.config.pgn.dir / "added.pgn")
        learner.game_ended("g1")  # the last game ended: a quiet moment
        assert learner.rebuilding
        assert learner._task is not None
        await learner._task
        assert learner.rebuilds == 1
        answer = await source.choose(chess.Board(), CONTEXT)
        # 1.e4 (a win and a loss) and, from the game without Annotator, 1.c4 (a win): weight 3.
        assert answer is not None and answer.move.uci() in ("e2e4", "c2c4")
        assert answer.source == "book" and learner.book is not None
        other = learner.book.best_other(chess.Board(), "standard", {
            chess.Move.from_uci("e2e4"), chess.Move.from_uci("d2d4")})
        assert other is not None and other.move.uci() == "c2c4"
        assert learner.maybe_rebuild() is None  # built within the day
        clock.now_s += REBUILD_INTERVAL_S
        task = learner.maybe_rebuild()
        assert task is not None
        await task
        assert learner.rebuilds == 2
        # The stamp survives a restart: a new learner waits for the day to pass.
        assert BookLearner(learning_config(tmp_path), clock=clock).maybe_rebuild() is None
    finally:
        await learner.close()


async def test_a_failed_rebuild_keeps_the_previous_book(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    config = learning_config(tmp_path)
    learner = BookLearner(config, clock=clock)
    try:
        first = learner.maybe_rebuild()
        assert first is not None
        await first
        before = learner.path.read_bytes()
        shutil.copy(DATA / "corrupt.pgn", config.pgn.dir / "two.pgn")
        clock.now_s += REBUILD_INTERVAL_S
        with caplog.at_level(logging.WARNING):
            second = learner.maybe_rebuild()
            assert second is not None
            await second
        assert "learned book not rebuilt (exit 1)" in caplog.text and "bad00002" in caplog.text
        assert learner.path.read_bytes() == before and learner.book is not None
    finally:
        await learner.close()


def test_a_build_beyond_its_memory_bound_writes_nothing(tmp_path: Path) -> None:
    big = tmp_path / "big.pgn"
    big.write_text(((DATA / "kibitz_games.pgn").read_text() + "\n") * 3000)  # 3 MB
    out = tmp_path / "book.bin"
    args = ["book", "build", "--no-records", str(big), "--out", str(out)]
    # The bound is set in the build itself: run it in a child, as the bot does.
    bounded = subprocess.run([sys.executable, "-m", "bot", *args, "--memory-mb", "16"],
                             capture_output=True, text=True, check=False)
    assert bounded.returncode == ExitCode.ERROR, bounded.stderr
    assert "more than --memory-mb 16 MiB" in bounded.stderr and not out.exists()
    assert kibitz(args) == ExitCode.OK and out.exists()


async def test_the_start_rebuilds_and_the_learned_book_comes_first(tmp_path: Path) -> None:
    features = Features(learning_config(tmp_path), url="http://x", token="t")
    try:
        hooks = features.hooks()
        learner = features.learner
        assert learner is not None and learner.rebuilding  # the start is a quiet moment
        assert learner._task is not None
        await learner._task
        assert learner.book is not None
        assert hooks.move_sources is not None
        assert [s.name for s in hooks.move_sources(CONTEXT)] == ["learned book"]
        rated = dataclasses.replace(CONTEXT, rated=True)
        assert [s.name for s in hooks.move_sources(rated)] == ["memory", "learned book"]
    finally:
        await features.close()
