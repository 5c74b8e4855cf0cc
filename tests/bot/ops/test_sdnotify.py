"""The sd_notify protocol against a real AF_UNIX datagram socket standing in for systemd."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.engines.pool import WARM_UP_TIMEOUT_S
from bot.ops import sdnotify
from tests.bot.e2e_support import GUARD_S
from tests.bot.stepped_time import SteppedTime


class FakeSystemd:
    """A bound datagram socket, as systemd's notify socket is."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(2.0)

    def receive(self) -> list[str]:
        return self.sock.recv(4096).decode().split("\n")

    def pending(self) -> list[list[str]]:
        messages = []
        self.sock.setblocking(False)
        try:
            while True:
                messages.append(self.sock.recv(4096).decode().split("\n"))
        except BlockingIOError:
            return messages
        finally:
            self.sock.settimeout(2.0)


@pytest.fixture
def socket_path() -> Iterator[Path]:
    # AF_UNIX paths are limited to 107 bytes: keep it short rather than under tmp_path.
    with tempfile.TemporaryDirectory(prefix="kbz") as directory:
        yield Path(directory) / "notify"


def test_messages_reach_a_path_socket(socket_path: Path) -> None:
    systemd = FakeSystemd(str(socket_path))
    env = {"NOTIFY_SOCKET": str(socket_path)}
    assert sdnotify.notify_ready("playing 0 games", environ=env)
    assert systemd.receive() == ["READY=1", "STATUS=playing 0 games"]
    assert sdnotify.notify_status("2 games\nin progress", environ=env)
    assert systemd.receive() == ["STATUS=2 games in progress"]
    assert sdnotify.notify_stopping(environ=env)
    assert systemd.receive() == ["STOPPING=1"]


def test_abstract_namespace_socket() -> None:
    name = f"kibitz-test-{os.getpid()}"
    systemd = FakeSystemd("\0" + name)
    env = {"NOTIFY_SOCKET": "@" + name}
    assert sdnotify.notify_socket_address(env) == "\0" + name
    assert sdnotify.notify_ready(environ=env)
    assert systemd.receive() == ["READY=1"]


def test_without_systemd_nothing_is_sent_and_nothing_fails(socket_path: Path) -> None:
    assert not sdnotify.notify_ready(environ={})
    assert sdnotify.watchdog_interval_s({"WATCHDOG_USEC": "1000000"}) is None
    # A socket that is gone (systemd restarted, say) is reported, not raised.
    assert not sdnotify.notify_stopping(environ={"NOTIFY_SOCKET": str(socket_path)})
    assert not sdnotify.notify_ready(environ={"NOTIFY_SOCKET": "relative/name"})


def test_watchdog_interval_belongs_to_this_process(socket_path: Path) -> None:
    env = {"NOTIFY_SOCKET": str(socket_path), "WATCHDOG_USEC": "30000000"}
    assert sdnotify.watchdog_interval_s(env) == 30.0
    assert sdnotify.watchdog_interval_s({**env, "WATCHDOG_PID": str(os.getpid())}) == 30.0
    assert sdnotify.watchdog_interval_s({**env, "WATCHDOG_PID": "1"}) is None
    assert sdnotify.watchdog_interval_s({**env, "WATCHDOG_USEC": "soon"}) is None
    assert sdnotify.watchdog_interval_s({**env, "WATCHDOG_USEC": "0"}) is None


async def test_watchdog_pings_at_half_the_timeout(socket_path: Path) -> None:
    systemd = FakeSystemd(str(socket_path))
    env = {"NOTIFY_SOCKET": str(socket_path), "WATCHDOG_USEC": "200000"}  # 0.2 s
    time = SteppedTime(until_s=0.25)
    task = asyncio.create_task(sdnotify.run_watchdog(env, sleep=time.sleep))
    await time.run_until_reached(task)  # pings at 0, 0.1 and 0.2 s; held at 0.3 s
    assert task.cancelled()
    assert time.sleeps == [0.1, 0.1, 0.1]
    assert systemd.pending() == [["WATCHDOG=1"]] * 3


async def test_watchdog_returns_at_once_without_a_watchdog() -> None:
    await asyncio.wait_for(sdnotify.run_watchdog({}), timeout=GUARD_S)  # a hang guard


async def test_kibitz_play_speaks_to_systemd(socket_path: Path, tmp_path: Path) -> None:
    """The real bot, as systemd runs it: READY=1, WATCHDOG=1 pings, STOPPING=1 on SIGTERM,
    exit 0, and journal-style log lines (no time stamps, priority prefixes)."""
    from bot.ops.config import dump_config
    from sandbox.opponent import ChallengeSpec
    from sandbox.server import SandboxServer
    from tests.bot.e2e_support import engine_command, make_config

    systemd = FakeSystemd(str(socket_path))
    systemd.sock.setblocking(False)
    config_file = tmp_path / "kibitz.yml"
    config_file.write_text(dump_config(make_config(tmp_path, max_move_s=0.5)))
    log_file = tmp_path / "journal.log"
    server = SandboxServer()
    url = await server.start()
    try:
        token = server.add_account("kibitz", bot=True)
        with log_file.open("w") as log:
            status = os.fstat(log.fileno())
            env = {**os.environ, "LICHESS_BOT_TOKEN": token, "NOTIFY_SOCKET": str(socket_path),
                   "WATCHDOG_USEC": "400000",
                   "JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
            env.pop("WATCHDOG_PID", None)
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "from bot.cli import main; main()",
                "play", "--config", str(config_file), "--url", url,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=log, env=env)
            try:
                # READY comes after the engine's warm-up, which on a fresh checkout waits for
                # numba to compile it: minutes on a busy machine. Waited for as long as the bot
                # runs (the bot's own warm-up limit), not for a fixed time.
                messages = await _collect(systemd, until="READY=1", timeout_s=WARM_UP_TIMEOUT_S,
                                          process=process)
                messages += await _collect(systemd, until="WATCHDOG=1", timeout_s=10, count=3)
                # A game in progress shows in the status (opponent, clocks, score).
                await server.start_opponent(
                    "sparring", engine=engine_command(), movetime_s=0.5,
                    challenge=ChallengeSpec("kibitz", 180, 0, repeat=False))
                messages += await _collect(systemd, until="STATUS=1 game: ", timeout_s=GUARD_S)
                process.send_signal(signal.SIGTERM)
                messages += await _collect(systemd, until="STOPPING=1", timeout_s=GUARD_S)
                code = await asyncio.wait_for(process.wait(), GUARD_S)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    finally:
        await server.stop()
    lines = [line for message in messages for line in message]
    assert code == 0, log_file.read_text()
    assert lines.index("READY=1") < lines.index("STOPPING=1")
    assert lines.count("WATCHDOG=1") >= 3
    assert any(line.startswith("STATUS=no games in progress") for line in lines)
    [playing] = [line for line in lines if line.startswith("STATUS=1 game: ")][:1]
    assert re.match(r"STATUS=1 game: \w{8} vs sparring \((white|black), \d+:\d\d v \d+:\d\d",
                    playing)
    journal = log_file.read_text()
    assert "<6>app: ready: accepting challenges" in journal
    assert token not in journal
    assert all(line.startswith("<") for line in journal.splitlines()), journal


async def _collect(systemd: FakeSystemd, *, until: str, timeout_s: float, count: int = 1,
                   process: asyncio.subprocess.Process | None = None) -> list[list[str]]:
    """Messages received until a line starting with `until` has been seen `count` times
    (an AssertionError as soon as `process`, if given, ends before that)."""
    loop = asyncio.get_running_loop()
    messages: list[list[str]] = []
    seen = 0
    async with asyncio.timeout(timeout_s):
        while seen < count:
            receive = asyncio.ensure_future(loop.sock_recv(systemd.sock, 4096))
            if process is not None:
                ended = asyncio.ensure_future(process.wait())
                await asyncio.wait({receive, ended}, return_when=asyncio.FIRST_COMPLETED)
                ended.cancel()
                if not receive.done():
                    receive.cancel()
                    raise AssertionError(f"the bot exited ({process.returncode}) before "
                                         f"{until!r}")
            data = await receive
            message = data.decode().split("\n")
            messages.append(message)
            seen += sum(line.startswith(until) for line in message)
    return messages
