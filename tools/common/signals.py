"""How a long tool run (a match, data generation) takes SIGTERM: as Ctrl-C, so it stops cleanly."""

from __future__ import annotations

import signal


def sigterm_as_interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C, once: ``timeout`` signals the process and then its whole process
    group, and a second SIGTERM would cut the clean-up (and the summary) short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt
