"""The stop signals: SIGTERM and SIGINT ask for a graceful stop, a second SIGINT for a stop
at once. Installed by the running bot on its loop, removed when it ends."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from bot.ops.sdnotify import Notify

log = logging.getLogger(__name__)


def install_stop_signals(stop: asyncio.Event, hard_stop: Callable[[], None], *, grace_s: float,
                         notify: Notify | None) -> Callable[[], None]:
    """SIGTERM/SIGINT: graceful stop (`stop` is set); a second SIGINT: stop at once
    (`hard_stop`). Returns the uninstaller."""
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_signal(signum: int) -> None:
        nonlocal interrupts
        if signum == signal.SIGINT:
            interrupts += 1
            if interrupts >= 2:
                log.warning("second interrupt: quitting now")
                hard_stop()
                return
        if not stop.is_set():
            log.info("%s: no new games; running games may finish within %.0f s "
                     "(Ctrl-C again to quit now)", signal.Signals(signum).name,
                     grace_s)
            if notify is not None:
                notify("STOPPING=1")
            stop.set()

    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            log.debug("cannot handle %s here", signum)

    def uninstall() -> None:
        for signum in installed:
            loop.remove_signal_handler(signum)

    return uninstall
