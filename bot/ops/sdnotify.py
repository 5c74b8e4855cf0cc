"""The systemd notify protocol, spoken directly over $NOTIFY_SOCKET.

Each message is one datagram of `KEY=value` lines to the AF_UNIX socket named
by NOTIFY_SOCKET (a leading '@' names the abstract namespace). Without
NOTIFY_SOCKET (not under systemd, or not Type=notify) every call does nothing.

- READY=1 once the bot is ready to play (the engine warmed, the token checked);
- STATUS=... a line `systemctl status` shows;
- WATCHDOG=1 from the event loop at half of WATCHDOG_USEC, so a hung loop is
  noticed and the service restarted;
- STOPPING=1 when shutdown begins.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)

Notify = Callable[[str], object]  # sends one notify message (e.g. "READY=1")

# systemd truncates STATUS= text; keep it to one readable line.
MAX_STATUS_CHARS = 200


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def notify_socket_address(environ: Mapping[str, str] | None = None) -> str | None:
    """The socket address from NOTIFY_SOCKET ('@name' becomes the abstract '\\0name')."""
    address = _environ(environ).get("NOTIFY_SOCKET", "")
    if not address:
        return None
    if address.startswith("@"):
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    log.warning("NOTIFY_SOCKET=%r is neither a path nor an abstract name; ignored", address)
    return None


def notify(*lines: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send one message (its lines joined); True if it was sent, False if not under systemd.

    Never raises: a notification that cannot be sent is logged and dropped, the
    bot keeps playing (systemd's watchdog is what notices a lasting problem)."""
    address = notify_socket_address(environ)
    if address is None:
        return False
    message = "\n".join(lines).encode("utf-8", "replace")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)
            sock.sendto(message, address)
    except OSError as error:
        log.warning("cannot notify systemd at %r: %s", address.replace("\0", "@"), error)
        return False
    return True


def _status_line(text: str) -> str:
    one_line = " ".join(text.split())
    return "STATUS=" + one_line[:MAX_STATUS_CHARS]


def notify_ready(status: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Tell systemd the service is up (Type=notify waits for this)."""
    lines = ["READY=1"]
    if status:
        lines.append(_status_line(status))
    return notify(*lines, environ=environ)


def notify_status(text: str, environ: Mapping[str, str] | None = None) -> bool:
    """A one-line status for `systemctl status`."""
    return notify(_status_line(text), environ=environ)


def notify_stopping(status: str | None = None,
                    environ: Mapping[str, str] | None = None) -> bool:
    """Tell systemd shutdown has begun (games are finishing within the grace period)."""
    lines = ["STOPPING=1"]
    if status:
        lines.append(_status_line(status))
    return notify(*lines, environ=environ)


def watchdog_interval_s(environ: Mapping[str, str] | None = None) -> float | None:
    """The watchdog timeout in seconds, or None if systemd watches no watchdog for us."""
    env = _environ(environ)
    usec = env.get("WATCHDOG_USEC", "")
    pid = env.get("WATCHDOG_PID", "")
    if not usec or notify_socket_address(env) is None:
        return None
    if pid and pid != str(os.getpid()):
        return None  # the watchdog is meant for another process (we were forked or exec'd)
    try:
        timeout_s = int(usec) / 1_000_000
    except ValueError:
        log.warning("WATCHDOG_USEC=%r is not a number of microseconds; no watchdog", usec)
        return None
    return timeout_s if timeout_s > 0 else None


async def run_watchdog(environ: Mapping[str, str] | None = None, *,
                       sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
    """Ping WATCHDOG=1 at half the watchdog timeout until cancelled.

    Runs as a task beside the bot on its event loop (`kibitz play` starts it and cancels it
    when the bot returns): the pings come from the event loop itself, so a loop that stops
    turning stops them and systemd restarts us.
    Returns at once when there is no watchdog to feed. `sleep` is the pause between pings
    (injected by tests)."""
    timeout_s = watchdog_interval_s(environ)
    if timeout_s is None:
        return
    interval_s = timeout_s / 2
    log.debug("feeding the systemd watchdog every %.1f s", interval_s)
    while True:
        notify("WATCHDOG=1", environ=environ)
        await sleep(interval_s)
