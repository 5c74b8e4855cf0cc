"""The built-in engine's host process: started once, it forks each game's engine.

The bot still starts one engine command per game and speaks UCI to it, as with any engine;
for the built-in engine that command is ``kibitz-engine connect SOCKET``, which has the engine
host (its engine side is ``engine.host``) fork a child sharing the host's loaded compiled
code. Without the host (it failed, or died) the same command runs the engine in its own
process, so games play on either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import tempfile
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

SOCKET_NAME: Final = "engine.sock"
# sockaddr_un's sun_path holds 108 bytes on Linux, the terminating NUL included.
MAX_SOCKET_PATH_BYTES: Final = 107
HOST_QUIT_TIMEOUT_S: Final = 2.0  # after closing its stdin, wait this long before killing
HOST_RETRY_S: Final = 5.0  # wait before starting a host that ended again


class EngineHostError(Exception):
    """The host did not start; the message says why."""


def socket_path(state_dir: Path) -> Path:
    """The host's socket in the state directory, or in a private temporary directory when
    the state directory's path is too long for a Unix socket."""
    path = state_dir.resolve() / SOCKET_NAME
    if len(str(path).encode()) <= MAX_SOCKET_PATH_BYTES:
        return path
    return Path(tempfile.mkdtemp(prefix="kibitz-")) / SOCKET_NAME


class EngineHost:
    """The running host process and the engine command that reaches it."""

    def __init__(self, path: Path, eval_file: str = "") -> None:
        self.path = path
        # the net the host loads before forking (empty: the engine's default net, if any)
        self.eval_file = eval_file
        self._process: asyncio.subprocess.Process | None = None

    @property
    def engine_command(self) -> tuple[str, ...]:
        """A game's engine: forked by the host (or in its own process without one)."""
        return (sys.executable, "-m", "engine", "connect", str(self.path))

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def children(self) -> set[int]:
        """The pids of the engines the host forked and that still run."""
        if self.pid is None:
            return set()
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return set()
        return {int(pid) for pid in text.split()}

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self, timeout_s: float) -> None:
        """Start the host and wait until it has loaded the compiled code and listens."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # stdin is a pipe the host watches: when the bot is gone, so is the host. A session
        # of its own (the engines it forks share it): a SIGINT or SIGTERM sent to the bot's
        # process group (Ctrl-C in a terminal, an init that signals the group) is the bot's
        # to obey, and the games it lets finish keep their engines.
        net_args = ("--evalfile", self.eval_file) if self.eval_file else ()
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "engine", "host", str(self.path), *net_args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            start_new_session=True)
        assert self._process.stdout is not None
        try:
            async with asyncio.timeout(timeout_s):
                line = await self._process.stdout.readline()
        except TimeoutError:
            await self.close()
            raise EngineHostError(f"the engine host did not start in {timeout_s:.0f} s") from None
        if line.strip() != b"ready":
            code = await self._process.wait()
            await self.close()
            raise EngineHostError(f"the engine host exited with code {code} before it was ready")
        log.info("engine host ready (pid %s, socket %s)", self._process.pid, self.path)

    async def keep_running(self, timeout_s: float) -> None:
        """Long-lived task: start the host again whenever it ends (engines started meanwhile
        run in processes of their own)."""
        while True:
            process = self._process
            if process is None:
                return
            code = await process.wait()
            if self._process is not process:
                return  # closed
            log.error("the engine host (pid %s) exited with code %s: starting it again",
                      process.pid, code)
            await self.close()
            await asyncio.sleep(HOST_RETRY_S)
            try:
                await self.start(timeout_s)
            except EngineHostError as exc:
                log.error("%s: engines run in processes of their own", exc)
                return

    async def close(self) -> None:
        """End the host (engines it forked end when the bot closes their pipes)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                async with asyncio.timeout(HOST_QUIT_TIMEOUT_S):
                    await process.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        with contextlib.suppress(OSError):
            self.path.unlink()  # a killed host leaves its socket file
