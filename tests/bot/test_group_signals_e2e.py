"""A signal sent to the bot's whole process group, as Ctrl-C in a terminal or an init that
forwards to the group sends it, reaches the bot alone: the engine host and the games' engines
play on until the bot ends them, and SIGKILL of the group leaves nothing behind.

The real ``kibitz play`` runs in a session of its own (so the test can signal its group), its
built-in engine forked by the engine host, against the in-process sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.engines.pool import WARM_UP_TIMEOUT_S
from bot.ops.config import dump_config
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import BOT, GUARD_S, ROOT, bot_games, make_config, wait_for

GRACE_S = 300  # game.shutdown_grace_s: long enough for the game to end by itself
PLIES_BEFORE_SIGNAL = 2  # the bot's engine has searched before the signal


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, their children, ...)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                children = {int(text) for text in (task / "children").read_text().split()}
                todo.extend(children - found)
                found |= children
    return found


class ProcessWatch:
    """Pidfds of processes that are not the test's children: each one's end is an event, and
    what the sandbox's game was at that moment is noted."""

    def __init__(self, pids: set[int], game_over: Callable[[], bool]) -> None:
        self._loop = asyncio.get_running_loop()
        self.ended: dict[int, bool] = {}  # pid -> whether the game was over when it ended
        self._all_ended = asyncio.Event()
        self._fds: dict[int, int] = {}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                self._fds[pid] = os.pidfd_open(pid)
        for pid, fd in self._fds.items():
            self._loop.add_reader(fd, self._on_end, pid, game_over)
        if not self._fds:
            self._all_ended.set()

    def _on_end(self, pid: int, game_over: Callable[[], bool]) -> None:
        self._loop.remove_reader(self._fds[pid])
        self.ended[pid] = game_over()
        if len(self.ended) == len(self._fds):
            self._all_ended.set()

    @property
    def pids(self) -> set[int]:
        return set(self._fds)

    async def all_ended(self, timeout_s: float) -> None:
        async with asyncio.timeout(timeout_s):
            await self._all_ended.wait()

    def close(self) -> None:
        for pid, fd in self._fds.items():
            if pid not in self.ended:
                self._loop.remove_reader(fd)
            os.close(fd)


@dataclass
class BotProcess:
    process: asyncio.subprocess.Process
    log_file: Path
    socket_file: Path

    def log(self) -> str:
        return self.log_file.read_text()


@pytest.fixture
def notify_path() -> Iterator[Path]:
    # AF_UNIX paths are limited to 107 bytes: keep it short rather than under tmp_path.
    with tempfile.TemporaryDirectory(prefix="kbz") as directory:
        yield Path(directory) / "notify"


async def wait_ready(notify: socket.socket, process: asyncio.subprocess.Process) -> None:
    """Until the bot says READY=1 (sd_notify), failing as soon as it exits instead."""
    loop = asyncio.get_running_loop()
    ended = asyncio.ensure_future(process.wait())
    try:
        # the warm-up may compile the engine first: as long as the bot itself allows
        async with asyncio.timeout(WARM_UP_TIMEOUT_S):
            while True:
                receive = asyncio.ensure_future(loop.sock_recv(notify, 4096))
                await asyncio.wait({receive, ended}, return_when=asyncio.FIRST_COMPLETED)
                if not receive.done():
                    receive.cancel()
                    raise AssertionError(f"the bot exited ({process.returncode}) before READY")
                if "READY=1" in (await receive).decode().split("\n"):
                    return
    finally:
        ended.cancel()


@contextlib.asynccontextmanager
async def bot_process(server: SandboxServer, tmp_path: Path,
                      notify_path: Path) -> AsyncIterator[BotProcess]:
    """`kibitz play` in a session of its own with the engine host, ready for a challenge."""
    config = make_config(tmp_path, max_move_s=0.1)
    config = dataclasses.replace(
        config, engine=dataclasses.replace(config.engine, command=None, fork_host=True),
        game=dataclasses.replace(config.game, shutdown_grace_s=GRACE_S))
    config_file = tmp_path / "kibitz.yml"
    config_file.write_text(dump_config(config))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.setblocking(False)
    log_file = tmp_path / "bot.log"
    env = {**os.environ, "LICHESS_BOT_TOKEN": server.add_account(BOT, bot=True),
           "NOTIFY_SOCKET": str(notify_path)}
    with log_file.open("w") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from bot.cli import main; main()",
            "play", "--config", str(config_file), "--url", server.url, cwd=ROOT,
            stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, env=env,
            start_new_session=True)
    try:
        await wait_ready(notify, process)
        yield BotProcess(process, log_file, tmp_path / "state" / "engine.sock")
    finally:
        notify.close()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


async def game_under_way(server: SandboxServer) -> str:
    """A game against a random mover, the bot's engine past its first search."""
    await server.start_opponent("rival", seed=7, challenge=ChallengeSpec(BOT, 60, 0,
                                                                          repeat=False))
    (game_id,) = await bot_games(server, 1, GUARD_S)
    await wait_for(lambda: len(server.game(game_id).uci_moves) >= PLIES_BEFORE_SIGNAL
                   or not server.game(game_id).playing)
    assert server.game(game_id).playing, "the game ended before the signal"
    return game_id


# Ctrl-C in a terminal; `kill -TERM -PGID`, or an init that forwards to the group. The bot
# takes a first SIGINT as it takes SIGTERM (test_app_e2e's
# test_sigterm_stops_gracefully_and_a_second_sigint_at_once), and the engines' own session
# keeps either signal from them: SIGINT repeats the SIGTERM case, in `make test-slow`.
@pytest.mark.parametrize("signum", [
    pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM])
async def test_a_stop_sent_to_the_group_leaves_the_game_its_engine(
        tmp_path: Path, notify_path: Path, signum: signal.Signals) -> None:
    async with SandboxServer(keepalive_s=0.5) as server, \
            bot_process(server, tmp_path, notify_path) as bot:
        game_id = await game_under_way(server)
        engines = descendants(bot.process.pid)  # the host, the launchers, the forked engines
        assert len(engines) >= 3, engines
        watch = ProcessWatch(engines, lambda: not server.game(game_id).playing)
        try:
            os.killpg(bot.process.pid, signum)
            record = await server.wait_for_game_end(game_id, GRACE_S)
            code = await asyncio.wait_for(bot.process.wait(), GRACE_S)
            await watch.all_ended(GUARD_S)
        finally:
            watch.close()
    log = bot.log()
    assert code == 0, log
    bot_side = "white" if record.white.lower() == BOT else "black"
    assert (record.status, record.winner) == ("mate", bot_side), log
    # every engine process of the bot at the signal played on until the game was over
    assert all(watch.ended.values()), (watch.ended, log)
    assert "restarting the engine" not in log and "engine failure" not in log, log
    assert "Traceback" not in log and "Exception ignored" not in log, log
    assert not bot.socket_file.exists()


async def test_sigkill_of_the_group_leaves_no_engine_behind(
        tmp_path: Path, notify_path: Path) -> None:
    async with SandboxServer(keepalive_s=0.5) as server, \
            bot_process(server, tmp_path, notify_path) as bot:
        game_id = await game_under_way(server)
        engines = descendants(bot.process.pid)
        assert len(engines) >= 3, engines
        watch = ProcessWatch(engines, lambda: not server.game(game_id).playing)
        try:
            os.killpg(bot.process.pid, signal.SIGKILL)
            await bot.process.wait()
            # each one ends when it reads the end of its input: the bot's side of the pipes
            # closed with it
            await watch.all_ended(GUARD_S)
        finally:
            watch.close()
        assert not bot.socket_file.exists()
    log = bot.log()  # the host and the launchers still write to it after the bot died
    assert "Traceback" not in log and "Exception ignored" not in log, log
