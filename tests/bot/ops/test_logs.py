"""Log lines: game ids, journal vs terminal format, masking, the per-game move log."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.ops.config import LogConfig
from bot.ops.logs import MoveLog, game_context, setup_logging, under_journal

SECRET = "lip_TopSecretToken_42"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = setup_logging("debug", stream=out, environ={}, secrets=[SECRET])
    yield out
    logging.getLogger().removeHandler(handler)


def test_terminal_lines_have_time_level_and_game_id(stream: io.StringIO) -> None:
    log = logging.getLogger("bot.game.game")
    with game_context("Qa7bX1pz"):
        log.info("moved %s", "e4")
    log.warning("no game here")
    first, second = stream.getvalue().splitlines()
    assert first.endswith("INFO  game: [Qa7bX1pz] moved e4")
    assert first[:8].count(":") == 2  # HH:MM:SS
    assert second.endswith("WARNING game: no game here")


async def test_game_ids_follow_tasks(stream: io.StringIO) -> None:
    log = logging.getLogger("bot.game.game")

    async def play(game_id: str) -> None:
        with game_context(game_id):
            await asyncio.sleep(0)
            log.info("thinking")
            await asyncio.gather(asyncio.create_task(child()))

    async def child() -> None:
        await asyncio.sleep(0)
        log.info("child task")

    await asyncio.gather(play("game0001"), play("game0002"))
    lines = stream.getvalue().splitlines()
    for game_id in ("game0001", "game0002"):
        assert sum(f"[{game_id}] thinking" in line for line in lines) == 1
        assert sum(f"[{game_id}] child task" in line for line in lines) == 1


def test_the_token_is_masked_wherever_it_appears(stream: io.StringIO) -> None:
    log = logging.getLogger("aiohttp.client")
    log.error("request failed: Authorization: Bearer %s", SECRET)
    try:
        raise RuntimeError(f"bad header {SECRET}")
    except RuntimeError:
        log.exception("with traceback")
    text = stream.getvalue()
    assert SECRET not in text
    assert "Bearer lip_********" in text
    assert "RuntimeError: bad header lip_********" in text


def test_journal_format_has_priority_and_no_time() -> None:
    with tempfile.TemporaryFile("w+") as out:
        status = os.fstat(out.fileno())
        env = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
        assert under_journal(out, env)
        assert not under_journal(out, {"JOURNAL_STREAM": "1:2"})
        handler = setup_logging("info", stream=out, environ=env)
        try:
            with game_context("abcd1234"):
                logging.getLogger("bot.lichess.client").warning("stream silent\nreopening")
            logging.getLogger("bot.lichess.client").debug("not shown at info")
        finally:
            logging.getLogger().removeHandler(handler)
        out.seek(0)
        assert out.read().splitlines() == ["<4>lichess.client: [abcd1234] stream silent",
                                           "<4>reopening"]


def test_move_log_goes_to_the_log_and_a_file(stream: io.StringIO, tmp_path: Path) -> None:
    settings = LogConfig(game_log=True, game_log_dir=tmp_path / "moves")
    with MoveLog("Qa7bX1pz", settings) as moves:
        moves.write("1. e4 depth 12 score +0.31 pv e4 e5 Nf3")
    assert "[Qa7bX1pz] 1. e4 depth 12 score +0.31 pv e4 e5 Nf3" in stream.getvalue()
    [line] = (tmp_path / "moves" / "Qa7bX1pz.log").read_text().splitlines()
    assert line.endswith(" 1. e4 depth 12 score +0.31 pv e4 e5 Nf3")


def test_move_log_off_means_debug_only(tmp_path: Path) -> None:
    out = io.StringIO()
    handler = setup_logging("info", stream=out, environ={})
    try:
        MoveLog("game0001", LogConfig(game_log=False)).write("1. e4")
    finally:
        logging.getLogger().removeHandler(handler)
    assert out.getvalue() == ""


def test_move_log_survives_an_unwritable_directory(stream: io.StringIO, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    moves = MoveLog("../evil", LogConfig(game_log_dir=blocker / "sub"))
    moves.write("1. d4")
    moves.close()
    assert "cannot write the move log" in stream.getvalue()
    assert "1. d4" in stream.getvalue()


def test_live_overlay_is_redrawn_below_log_lines() -> None:
    out = io.StringIO()
    handler = setup_logging("info", stream=out, environ={})
    try:
        handler.overlay = lambda: ["== 1 game ==", "game0001 vs someone"]
        handler.redraw()
        logging.getLogger("bot.app").info("hello")
        handler.clear_overlay()
    finally:
        logging.getLogger().removeHandler(handler)
    text = out.getvalue()
    board = "== 1 game ==\ngame0001 vs someone\n"
    erase = "\x1b[2F\x1b[J"
    assert text.startswith(board + erase)
    assert text.endswith("app: hello\n" + board + erase)


def test_live_view_only_on_a_terminal_unless_asked() -> None:
    from bot.ops.logs import live_view_handler

    handler = setup_logging("info", stream=io.StringIO(), environ={})
    try:
        assert live_view_handler("auto") is None  # a StringIO is no terminal
        assert live_view_handler("always") is handler
        assert live_view_handler("never") is None
    finally:
        logging.getLogger().removeHandler(handler)
    assert live_view_handler("always") is None  # no handler installed: nothing to draw on


def test_live_overlay_never_outgrows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINES", "8")
    monkeypatch.setenv("COLUMNS", "30")
    out = io.StringIO()
    handler = setup_logging("info", stream=out, environ={})
    try:
        handler.overlay = lambda: [f"game {n} " + "x" * 50 for n in range(20)]
        handler.redraw()
    finally:
        logging.getLogger().removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert len(lines) == 6
    assert all(len(line) <= 29 for line in lines)
    assert lines[-1] == "... and 15 more"


def test_live_view_comes_on_by_itself_on_a_terminal() -> None:
    import pty

    from bot.ops.logs import live_view_handler

    controller, terminal = pty.openpty()
    with os.fdopen(terminal, "w") as stream:
        handler = setup_logging("info", stream=stream, environ={})
        try:
            assert live_view_handler("auto") is handler
            status = os.fstat(stream.fileno())
            journal = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
            assert live_view_handler("auto", journal) is None  # the journal is no terminal
        finally:
            logging.getLogger().removeHandler(handler)
    os.close(controller)
