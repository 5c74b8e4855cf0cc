"""A game's helper tasks: errors stay inside, and a helper that never ran leaves no coroutine."""

from __future__ import annotations

import asyncio
import inspect
import logging

import pytest

from bot.game.game import Game


def bare_game() -> Game:
    """A Game with only what its helpers use (an id for names and logs, a task group)."""
    game = Game.__new__(Game)
    game.id = "helpers1"
    return game


async def test_a_helper_cancelled_before_it_ran_closes_its_coroutine() -> None:
    game = bare_game()
    ran: list[str] = []

    async def helper() -> None:
        ran.append("helper")

    coro = helper()
    async with asyncio.TaskGroup() as tg:
        game._tg = tg
        task = game.spawn(coro, "move")
        task.cancel()  # the game ends before the helper's first step
    await asyncio.sleep(0)
    assert task.cancelled() and not ran
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


async def test_a_failing_helper_is_logged_and_the_game_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    game = bare_game()

    async def helper() -> None:
        raise ValueError("a bad reply")

    async with asyncio.TaskGroup() as tg:
        game._tg = tg
        task = game.spawn(helper(), "chat reply")
    assert task.done() and not task.cancelled() and task.exception() is None
    assert "chat reply failed" in caplog.text
    assert any(r.levelno == logging.ERROR for r in caplog.records)
