"""The latest warnings and errors of the whole bot, for the status page (a ring buffer)."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from bot.ops.token import mask_token

WARNINGS_KEPT: Final = 30
MESSAGE_CHARS: Final = 500  # a warning longer than this is cut (a traceback stays in the log)


@dataclass(frozen=True, slots=True)
class Warned:
    at: float  # epoch seconds
    level: str
    logger: str
    message: str


class WarningRing(logging.Handler):
    """Keeps the last `WARNINGS_KEPT` records at WARNING or above, with secrets masked."""

    def __init__(self, secrets: Iterable[str] = (), kept: int = WARNINGS_KEPT) -> None:
        super().__init__(logging.WARNING)
        self.secrets = [s for s in secrets if s]
        self.entries: deque[Warned] = deque(maxlen=kept)
        self.count = 0  # every warning seen, so a page knows when the ring moved

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string in some log call: keep what can be kept
            message = str(record.msg)
        for secret in self.secrets:
            message = message.replace(secret, mask_token(secret))
        self.entries.append(Warned(record.created, record.levelname, record.name,
                                   message[:MESSAGE_CHARS]))
        self.count += 1
