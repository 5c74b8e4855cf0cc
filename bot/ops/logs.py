"""Logging: plain lines on stderr, tagged with the game id, secrets masked.

- On a terminal or in a file: `04:31:07 INFO  game: [Qa7bX1pz] e4 depth 12 ...`.
- Under systemd (JOURNAL_STREAM names our stderr) the journal adds the time
  and the unit, so lines carry only a syslog priority prefix (`<6>`), which
  journald turns into the entry's priority.
- Every line logged inside `game_context(game_id)` (the game's task and the
  tasks it starts) carries that game id.
- A `MoveLog` per game records every move with its search info: in the main
  log (config log.game_log) and, if log.game_log_dir is set, in a file per game.
- A live view (bot/status.py) can sit below the log lines on a terminal: the
  handler erases it before each line and draws it again after.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TextIO

from bot.ops.config import LogConfig
from bot.ops.token import mask_token

# The game a log line belongs to: set for a game's task and inherited by its children.
GAME_ID: ContextVar[str | None] = ContextVar("kibitz_game_id", default=None)

# Libraries that are chatty at INFO/DEBUG about things the bot already reports.
QUIET_LOGGERS = ("aiohttp.access", "urllib3", "numba", "chess.engine", "asyncio")
# syslog priorities journald reads from a `<N>` line prefix.
SYSLOG_PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4,
                   logging.INFO: 6, logging.DEBUG: 7}
MOVE_LOGGER = "bot.moves"
_SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9_-]")


@contextlib.contextmanager
def game_context(game_id: str) -> Iterator[None]:
    """Tag every log line inside this block (and tasks started in it) with `game_id`."""
    token = GAME_ID.set(game_id)
    try:
        yield
    finally:
        GAME_ID.reset(token)


def under_journal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """True if `stream` is connected to the systemd journal (JOURNAL_STREAM matches it)."""
    value = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    try:
        status = os.fstat(stream.fileno())
        return (int(device), int(inode)) == (status.st_dev, status.st_ino)
    except (ValueError, OSError, AttributeError):
        return False


def where(logger_name: str) -> str:
    """The short name a log line shows for a logger."""
    if not logger_name.startswith("bot."):
        return logger_name
    parts = logger_name.split(".")[1:]
    if len(parts) == 2 and parts[0] == parts[1]:
        return parts[0]
    return ".".join(parts)


class ContextFilter(logging.Filter):
    """Adds `game` (" [id]" or "") and `where`: a bot logger's name without "bot.", a module
    named as its package once ("bot.lichess.client" shows as "lichess.client", "bot.game.game"
    as "game")."""

    def filter(self, record: logging.LogRecord) -> bool:
        game_id = getattr(record, "game_id", None) or GAME_ID.get()
        record.game = f" [{game_id}]" if game_id else ""
        record.where = where(record.name)
        return True


class RedactFilter(logging.Filter):
    """Masks secrets (the API token) in the rendered message, whatever logged it."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        text = record.exc_text or ""
        if record.exc_info and not text:
            text = logging.Formatter().formatException(record.exc_info)
        if any(secret in message or secret in text for secret in self.secrets):
            for secret in self.secrets:
                message = message.replace(secret, mask_token(secret))
                text = text.replace(secret, mask_token(secret))
            record.msg, record.args = message, None
            record.exc_info, record.exc_text = None, text or None
        return True


class JournalFormatter(logging.Formatter):
    """`<6>game: [id] message`: no time (the journal adds it), syslog priority first."""

    def __init__(self) -> None:
        super().__init__("%(where)s:%(game)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        priority = SYSLOG_PRIORITY.get(record.levelno, 6)
        lines = super().format(record).splitlines() or [""]
        # Each line becomes its own journal entry; give a traceback's lines the same priority.
        return "\n".join(f"<{priority}>{line}" for line in lines)


class TerminalFormatter(logging.Formatter):
    """`04:31:07 INFO  game: [id] message` (time of day; a day is in the file name or journal)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-5s %(where)s:%(game)s %(message)s",
                         datefmt="%H:%M:%S")


class LiveHandler(logging.StreamHandler[TextIO]):
    """A stream handler that keeps a block of live lines (the status view) below the log."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self.overlay: Callable[[], list[str]] | None = None
        self._drawn = 0

    def _erase(self) -> str:
        if not self._drawn:
            return ""
        drawn, self._drawn = self._drawn, 0
        return f"\x1b[{drawn}F\x1b[J"  # up `drawn` lines to column 0, clear to the end

    def _draw(self) -> str:
        if self.overlay is None:
            return ""
        size = shutil.get_terminal_size()
        width, height = max(20, size.columns - 1), max(3, size.lines - 2)
        lines = [line[:width] for line in self.overlay()]  # no wrapping: the count must hold
        if len(lines) > height:  # the cursor cannot go back above the top of the screen
            hidden = len(lines) - height + 1
            lines = [*lines[: height - 1], f"... and {hidden} more"]
        self._drawn = len(lines)
        return "".join(line + "\n" for line in lines)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            with self.lock or contextlib.nullcontext():
                self.stream.write(self._erase() + text + "\n" + self._draw())
                self.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def redraw(self) -> None:
        """Draw the live block again (the status view calls this on its own tick)."""
        with self.lock or contextlib.nullcontext():
            self.stream.write(self._erase() + self._draw())
            self.flush()

    def clear_overlay(self) -> None:
        """Remove the live block and stop drawing it."""
        with self.lock or contextlib.nullcontext():
            self.stream.write(self._erase())
            self.overlay = None
            self.flush()


def live_view_handler(mode: str, environ: Mapping[str, str] | None = None
                      ) -> LiveHandler | None:
    """The handler to draw the live view on (config log.live_view), or None.

    auto: only when the log goes to a terminal (not the journal, not a file); always: on
    whatever stream the log goes to; never: no live view."""
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, LiveHandler)]
    if mode == "never" or not handlers:
        return None
    handler = handlers[-1]
    if mode == "always":
        return handler
    stream = handler.stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return handler if tty and not under_journal(stream, environ) else None


def parse_level(name: str) -> int:
    """A logging level from its config/CLI name (debug ... critical)."""
    level = logging.getLevelName(name.upper())
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {name!r}")
    return level


def setup_logging(level: str, *, stream: TextIO | None = None,
                  environ: Mapping[str, str] | None = None,
                  secrets: Iterable[str] = ()) -> LiveHandler:
    """Send all logging to `stream` (stderr) at `level`; returns the handler.

    Replaces the handlers of any earlier call, so it can run again (tests, the demo)."""
    out = sys.stderr if stream is None else stream
    handler = LiveHandler(out)
    handler.setFormatter(JournalFormatter() if under_journal(out, environ)
                         else TerminalFormatter())
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactFilter(secrets))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, LiveHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(parse_level(level))
    quiet = max(logging.WARNING, parse_level(level))
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
    return handler


class MoveLog:
    """One game's record of every move with its search info.

    Lines go to the `bot.moves` logger (INFO when log.game_log is on, else
    DEBUG) tagged with the game id, and to `<log.game_log_dir>/<game id>.log`
    when that directory is configured."""

    def __init__(self, game_id: str, settings: LogConfig) -> None:
        self.game_id = game_id
        self.level = logging.INFO if settings.game_log else logging.DEBUG
        self.logger = logging.getLogger(MOVE_LOGGER)
        self.path: Path | None = None
        self._file: TextIO | None = None
        if settings.game_log_dir is not None:
            directory = settings.game_log_dir
            self.path = directory / f"{_SAFE_FILE_NAME.sub('_', game_id)}.log"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8", buffering=1)
            except OSError as error:
                self.logger.warning("cannot write the move log %s: %s", self.path, error,
                                    extra={"game_id": game_id})
                self.path = None

    def write(self, line: str) -> None:
        """Record one line (a move and its search info)."""
        self.logger.log(self.level, "%s", line, extra={"game_id": self.game_id})
        if self._file is not None:
            try:
                self._file.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")
            except OSError as error:
                self.logger.warning("move log %s: %s; no more lines go there", self.path,
                                    error, extra={"game_id": self.game_id})
                self.close()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def __enter__(self) -> MoveLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
