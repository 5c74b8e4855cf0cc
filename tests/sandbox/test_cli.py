"""Standalone runs: run_sandbox prints its URL and tokens; `python -m sandbox` works."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import aiohttp
import pytest

from sandbox.server import _challenge_spec, run_sandbox
from tests.sandbox.spec import GUARD_S


async def started_sandbox(**options: Any) -> tuple[asyncio.Task[None], list[str]]:
    """run_sandbox on a free port, once it has printed its URL and two tokens."""
    lines: list[str] = []
    printed = asyncio.Event()

    def print_line(line: str) -> None:
        lines.append(line)
        if len(lines) == 3:
            printed.set()

    task = asyncio.create_task(run_sandbox("127.0.0.1", 0, keepalive_s=0.2,
                                           print_line=print_line, **options))
    await asyncio.wait_for(printed.wait(), GUARD_S)
    return task, lines


async def test_run_sandbox_prints_url_and_tokens_and_serves() -> None:
    task, lines = await started_sandbox(challenge="1+0")
    try:
        url = lines[0].removeprefix("url: ")
        assert lines[0].startswith("url: http://127.0.0.1:")
        tokens = {line.split()[1]: line.split()[2:] for line in lines[1:]}
        assert tokens["kibitz"][1] == "bot" and tokens["sparring"][1] == "human"
        headers = {"Authorization": f"Bearer {tokens['kibitz'][0]}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.get(url + "/api/account") as reply:
                assert (await reply.json())["title"] == "BOT"
            # The sparring partner challenges the bot with the asked time control.
            async with session.get(url + "/api/stream/event") as stream:
                async with asyncio.timeout(GUARD_S):
                    async for raw in stream.content:
                        if raw.strip():
                            break
                event = json.loads(raw)
        assert event["type"] == "challenge"
        assert event["challenge"]["timeControl"]["show"] == "1+0"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_python_m_bot_sandbox_runs_until_stopped() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox", "--port", "0", "--keepalive", "1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(GUARD_S):
            url_line = (await process.stdout.readline()).decode().strip()
            token_lines = [(await process.stdout.readline()).decode().split() for _ in range(2)]
        url = url_line.removeprefix("url: ")
        assert url.startswith("http://127.0.0.1:")
        assert [t[0] for t in token_lines] == ["token:", "token:"]
        async with aiohttp.ClientSession() as session, \
                session.get(url + "/api/bot/online") as reply:
            assert reply.status == 200
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), GUARD_S)


async def test_bad_command_lines_exit_with_a_message() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox", "--fault", "status=99",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 2
    assert b"HTTP error code" in stderr


@pytest.mark.parametrize(("text", "message"), [
    ("fast", "expected <minutes>\\+<increment>"),
    ("1.1+0", "clock.limit"),
    ("3+99", "clock.increment"),
])
def test_bad_challenge_time_controls_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _challenge_spec(text, "kibitz")


async def test_a_missing_engine_or_a_taken_port_is_reported() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox", "--port", "0", "--engine", "/nonexistent/engine",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    assert process.returncode == 2
    assert b"cannot start the UCI engine" in stderr
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sandbox", "--port", str(port),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, stderr = await asyncio.wait_for(process.communicate(), GUARD_S)
    finally:
        blocker.close()
        await blocker.wait_closed()
    assert process.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}".encode() in stderr


async def test_an_arena_from_the_command_line_has_the_sparring_partner_in_it() -> None:
    task, lines = await started_sandbox(arena="1+0/5/60:nobots")
    try:
        url = lines[0].removeprefix("url: ")
        arena_id = lines[3].removeprefix("arena: ")
        async with aiohttp.ClientSession() as session, \
                session.get(f"{url}/api/tournament/{arena_id}") as reply:
            shown = await reply.json()
        assert (shown["nbPlayers"], shown["clock"]) == (1, {"limit": 60, "increment": 0})
        assert "secondsToStart" in shown and "isStarted" not in shown
        assert shown["standing"]["players"][0]["name"] == "sparring"
        assert shown["verdicts"]["list"][0]["condition"] == "Bot players are not allowed"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_both_command_lines_take_the_same_options() -> None:
    """`kibitz sandbox` and `python -m sandbox` are one parser (sandbox/cli.py)."""
    import argparse

    from sandbox.cli import SandboxOptions, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--port", "0", "--keepalive", "1.5", "--quirk",
                              "split_final_state", "--no-opponent"])
    options = SandboxOptions.from_args(args)
    assert (options.port, options.keepalive_s, options.quirks, options.opponent) == (
        0, 1.5, ("split_final_state",), False)
    with pytest.raises(ValueError, match="--no-opponent"):
        SandboxOptions.from_args(parser.parse_args(["--no-opponent", "--challenge", "1+0"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--keepalive", "0"])


async def test_with_no_opponent_nobody_plays_the_human_account() -> None:
    task, lines = await started_sandbox(opponent=False)
    try:
        url = lines[0].removeprefix("url: ")
        tokens = {line.split()[1]: line.split()[2] for line in lines[1:]}
        bot = {"Authorization": f"Bearer {tokens['kibitz']}"}
        async with aiohttp.ClientSession(headers=bot) as session:
            async with session.post(url + "/api/challenge/sparring", data={
                    "clock.limit": "60", "clock.increment": "0"}) as reply:
                challenge_id = (await reply.json())["id"]
            async with session.get(url + "/api/users/status?ids=sparring") as reply:
                assert (await reply.json())[0].get("online", False) is False
        human = {"Authorization": f"Bearer {tokens['sparring']}"}
        # Nobody answers the challenge until the human account's own client does (read by
        # the human: the bot's token has bot:play alone, not challenge:read).
        async with aiohttp.ClientSession(headers=human) as session, \
                session.get(url + f"/api/challenge/{challenge_id}/show") as reply:
            assert (await reply.json())["status"] == "created"
        async with aiohttp.ClientSession(headers=human) as session, session.post(
                url + f"/api/challenge/{challenge_id}/accept") as reply:
            assert reply.status == 200
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_at_its_stop_the_sandbox_says_how_many_games_it_left_unrated() -> None:
    task, lines = await started_sandbox(opponent=False)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert lines[-1].startswith("games: 0 finished, 0 rated, 0 left unrated")
