"""``kibitz-engine connect SOCKET``: a game's engine, forked by the engine host.

A small process (no numba, no numpy: a few MB of its own) that hands its stdin, stdout and
stderr to the host (``engine.host``) and then stands in for the forked child: it
forwards the signals it gets to the child and exits the way the child did, so whoever
started it (the bot, through python-chess's ``popen_uci``) sees an ordinary engine process.
With no host listening it runs the UCI loop itself, like ``kibitz-engine``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import sys
from typing import Final, NoReturn

from engine.host import HELLO, MAX_MESSAGE_BYTES

FORWARDED_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
EXIT_HOST_LOST: Final = 70  # the host went away before the child ended (EX_SOFTWARE)


class _Lines:
    """Lines read from the host's connection."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

    def next(self) -> str | None:
        while b"\n" not in self._buffer:
            chunk = self._conn.recv(MAX_MESSAGE_BYTES)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("ascii", "replace")


def connect(path: str) -> socket.socket | None:
    """A connection to the host, or None when none listens at `path`."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def run_in_process(reason: str) -> NoReturn:
    """The fallback: this process is the engine."""
    print(f"kibitz-engine: {reason}; running the engine in this process", file=sys.stderr,
          flush=True)
    from engine.uci import main_process

    main_process()


def exit_like(status: int) -> int:
    """Exit the way a `waitpid` status says the child did: the same signal, or the same code."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        # the child dumped its own core if it was allowed to: this process's would be noise
        # (a service whose system calls exclude @resources may refuse: then so be it)
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), sig)
        return 128 + sig  # only if the signal could not end this process
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def detach_stdio() -> None:
    """The child has our stdin and stdout: drop our copies, so the pipes close with it."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def main(path: str) -> int:
    conn = connect(path)
    if conn is None:
        return run_in_process(f"no engine host at {path}")
    lines = _Lines(conn)
    try:
        socket.send_fds(conn, [HELLO], [0, 1, 2])
        answer = lines.next()
    except OSError as exc:
        conn.close()
        return run_in_process(f"the engine host at {path} failed: {exc}")
    if answer is None or not answer.startswith("pid "):
        conn.close()
        return run_in_process(f"the engine host at {path} answered {answer!r}")
    child = int(answer.split()[1])

    def forward(sig: int, _: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, sig)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    detach_stdio()
    while True:
        line = lines.next()
        if line is None:
            print(f"kibitz-engine: the engine host went away; engine pid {child} left running "
                  "until its input closes", file=sys.stderr, flush=True)
            return EXIT_HOST_LOST
        if line.startswith("exit "):
            return exit_like(int(line.split()[1]))
