"""Shared state the tests must not leak into each other (they run in a random order)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

# Loggers whose level a test may change (quiet_logs, caplog.set_level, setup_logging).
PROJECT_LOGGERS = ("", "bot", "sandbox", "engine")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """A test that sets up the bot's logging (the command line, the demo) leaves no handler
    on the root logger, writing to a stream that is closed by then, for the tests after it."""
    loggers = [logging.getLogger(name) for name in PROJECT_LOGGERS]
    levels = [logger.level for logger in loggers]
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    for handler in root.handlers[:]:
        if handler not in handlers and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
