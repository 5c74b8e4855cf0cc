"""The `kibitz` command: help, exit codes, check-config, token checks and upgrade.

Server-side checks run against the in-process sandbox over real HTTP; the CLI's
blocking account calls run in a worker thread so the sandbox keeps serving.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from bot import cli
from bot.cli import ExitCode
from bot.ops.config import Config, to_plain
from bot.ops.token import TOKEN_ENV
from bot.watch.server import PASSWORD_ENV
from sandbox.server import SandboxServer
from tests.bot.e2e_support import GUARD_S

COMMANDS = ("play", "demo", "sandbox", "check-config", "upgrade", "tournament", "book",
            "version")


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)


@pytest.fixture
async def server() -> AsyncIterator[SandboxServer]:
    sandbox = SandboxServer()
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.stop()


async def kibitz(*argv: str) -> int:
    """Run the command line off the event loop (its account calls block)."""
    return await asyncio.to_thread(cli.run, list(argv))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_exit_codes(command: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.run([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: kibitz {command}" in text
    assert "exit codes:" in text and "130" in text


def test_top_level_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.run(["--help"])
    text = capsys.readouterr().out
    for command in COMMANDS:
        assert command in text


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["fly"], ["sandbox", "--port", "99999"], ["play", "--log-level", "loud"],
                 ["play", "--url", "lichess.org"], ["demo", "--clock", "fast"]):
        with pytest.raises(SystemExit) as done:
            cli.run(argv)
        assert done.value.code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "must be a port number 0-65535, got 99999" in err
    assert "--url: must be an http:// or https:// URL, got 'lichess.org'" in err
    assert "expected MINUTES+INCREMENT" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["version"]) == ExitCode.OK
    assert capsys.readouterr().out.startswith("kibitz 0.1.0, python 3.")


def test_check_config_prints_the_effective_configuration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    secret = "lip_AbCdEfGhIjKlMnOp"
    monkeypatch.setenv(TOKEN_ENV, secret)
    config = tmp_path / "my.yml"
    config.write_text("challenge: {concurrency: 3}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert secret not in out
    assert f"# token: lip_******** (from {TOKEN_ENV})" in out
    effective = yaml.safe_load(out)
    expected = to_plain(Config())
    expected["challenge"]["concurrency"] = 3
    assert effective == expected


def test_check_config_says_what_the_games_take_and_warns_beyond_the_machine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "small.yml"
    config.write_text("challenge: {concurrency: 1}\nengine: {options: {Hash: 1}}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "# memory: about " in out and " MB available" in out
    assert "# warning:" not in out
    # 65 engines of 4 GB tables: more than any machine running these tests has available
    config.write_text("challenge: {concurrency: 64}\nengine: {options: {Hash: 4096}}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.OK
    assert "# warning: the configured games need about" in capsys.readouterr().out


def test_check_config_without_a_token_still_validates(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["check-config"]) == ExitCode.OK
    assert "# token: none usable: no Lichess API token" in capsys.readouterr().out


def test_an_invalid_configuration_exits_3_and_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yml"
    config.write_text("challenge:\n  min_base_s: fast\nchalenge: {}\n")
    for command in ("check-config", "play", "upgrade"):
        assert cli.run([command, "--config", str(config)]) == ExitCode.CONFIG
        captured = capsys.readouterr()
        assert captured.out == ""
        assert (f"kibitz: {config}: challenge.min_base_s: must be a number of seconds >= 0, "
                "got 'fast'") in captured.err
        assert f"kibitz: {config}: chalenge: unknown key; did you mean challenge?" \
            in captured.err
    assert cli.run(["play", "--config", str(tmp_path / "absent.yml")]) == ExitCode.CONFIG


def test_play_without_a_usable_token_exits_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["play"]) == ExitCode.TOKEN
    assert "no Lichess API token" in capsys.readouterr().err
    monkeypatch.setenv(TOKEN_ENV, "lip_not a token")
    assert cli.run(["play"]) == ExitCode.TOKEN
    err = capsys.readouterr().err
    assert "only letters, digits and _" in err and "not a token" not in err


async def check_token(server: SandboxServer, monkeypatch: pytest.MonkeyPatch,
                      token: str) -> int:
    monkeypatch.setenv(TOKEN_ENV, token)
    return await kibitz("check-config", "--check-token", "--url", server.url)


async def test_check_token_accepts_a_bot_account(
        server: SandboxServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    token = server.add_account("MyBot", bot=True)
    assert await check_token(server, monkeypatch, token) == ExitCode.OK
    out = capsys.readouterr().out
    assert "# account: MyBot (BOT account)" in out
    assert "bot:play" in out and "problem" not in out


async def test_check_token_explains_what_is_wrong(
        server: SandboxServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    human = server.add_account("human", bot=False)
    assert await check_token(server, monkeypatch, human) == ExitCode.TOKEN
    assert "run `kibitz upgrade`" in capsys.readouterr().out
    no_scope = server.add_account("noscope", bot=True, scopes=["challenge:read"])
    assert await check_token(server, monkeypatch, no_scope) == ExitCode.TOKEN
    assert "lacks the bot:play scope" in capsys.readouterr().out
    assert await check_token(server, monkeypatch, "lip_NobodyHasThis") == ExitCode.TOKEN
    assert "rejected the token (401)" in capsys.readouterr().err


async def test_an_unreachable_server_exits_5(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(TOKEN_ENV, "lip_Whatever")
    url = f"http://127.0.0.1:{port}"
    assert await kibitz("check-config", "--check-token", "--url", url) == ExitCode.UNREACHABLE
    assert f"cannot reach {url}" in capsys.readouterr().err


async def test_upgrade_needs_the_account_name_typed(
        server: SandboxServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(TOKEN_ENV, server.add_account("NewBot", bot=False,
                                                     scopes=["bot:play"]))
    answers = iter(["yes", "newbot"])
    prompts: list[str] = []

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr(builtins, "input", fake_input)
    assert await kibitz("upgrade", "--url", server.url) == ExitCode.ERROR
    assert "not confirmed; nothing was changed" in capsys.readouterr().err
    assert not server.account("NewBot").bot
    assert await kibitz("upgrade", "--url", server.url) == ExitCode.OK
    assert prompts == ["Type the account name (NewBot) to confirm: "] * 2
    assert "cannot be undone" in capsys.readouterr().out
    assert server.account("NewBot").bot
    assert await kibitz("upgrade", "--url", server.url) == ExitCode.OK
    assert "already a BOT account" in capsys.readouterr().out


async def test_upgrade_end_of_input_is_no(server: SandboxServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, server.add_account("Quiet", bot=False, scopes=["bot:play"]))

    def closed_input(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr(builtins, "input", closed_input)
    assert await kibitz("upgrade", "--url", server.url) == ExitCode.ERROR
    assert not server.account("Quiet").bot


async def test_upgrade_yes_and_a_refusal_from_the_server(
        server: SandboxServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(TOKEN_ENV, server.add_account("Scripted", bot=False,
                                                     scopes=["bot:play"]))
    assert await kibitz("upgrade", "--yes", "--url", server.url) == ExitCode.OK
    assert server.account("Scripted").bot
    server.add_account("Veteran", bot=False, scopes=["bot:play"])
    server.account("Veteran").games_played = 3
    monkeypatch.setenv(TOKEN_ENV, server.account("Veteran").token)
    assert await kibitz("upgrade", "--yes", "--url", server.url) == ExitCode.TOKEN
    assert "You already have games played" in capsys.readouterr().err
    assert not server.account("Veteran").bot


@pytest.mark.parametrize(("stop_signal", "prelude"), [
    (signal.SIGINT, ""),
    (signal.SIGTERM, ""),
    # started in the background by a shell: SIGINT arrives ignored, yet Ctrl-C must stop it
    (signal.SIGINT, "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "),
], ids=["sigint", "sigterm", "sigint-inherited-ignored"])
async def test_sandbox_command_serves_until_interrupted(
        stop_signal: signal.Signals, prelude: str, tmp_path: Path) -> None:
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", prelude + "from bot.cli import main; main()",
            "sandbox", "--port", "0", stdout=asyncio.subprocess.PIPE, stderr=stderr)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(GUARD_S):
            url = (await process.stdout.readline()).decode().split()[1]
            tokens = [(await process.stdout.readline()).decode().split() for _ in range(2)]
        assert {(kind, name) for _, name, _, kind in tokens} == {("bot", "kibitz"),
                                                                 ("human", "sparring")}
        bot_token = next(token for _, _, token, kind in tokens if kind == "bot")
        async with aiohttp.ClientSession() as session, session.get(
                f"{url}/api/account", headers={"Authorization": f"Bearer {bot_token}"}) as reply:
            assert (await reply.json())["title"] == "BOT"
        process.send_signal(stop_signal)
        assert await asyncio.wait_for(process.wait(), GUARD_S) == ExitCode.OK, \
            (tmp_path / "stderr.log").read_text()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_sandbox_command_refuses_bad_faults(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.run(["sandbox", "--fault", "nonsense"]) == ExitCode.USAGE
    assert "fault 'nonsense'" in capsys.readouterr().err


def test_check_config_opens_books_and_finds_the_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "files.yml"
    config.write_text(f"book: {{enabled: true, books: {{standard: ['{tmp_path / 'no.bin'}']}}}}\n"
                      "engine: {command: [no-such-engine-here, --uci]}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.CONFIG
    out = capsys.readouterr().out
    assert "# problem: engine.command: cannot find the program 'no-such-engine-here'" in out
    assert f"# problem: opening book '{tmp_path / 'no.bin'}' does not exist" in out


def test_check_config_refuses_the_page_beyond_loopback_without_a_password(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `play` does at start; the environment's password is enough."""
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    config = tmp_path / "watch.yml"
    config.write_text("watch: {host: 0.0.0.0}\n")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.CONFIG
    assert "# problem: watch.host is '0.0.0.0', beyond loopback: set watch.password" \
        in capsys.readouterr().out
    monkeypatch.setenv(PASSWORD_ENV, "s3cret")
    assert cli.run(["check-config", "--config", str(config)]) == ExitCode.OK
    assert "# problem:" not in capsys.readouterr().out


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restore_logging")
async def test_play_exit_codes_that_stop_systemd_restarting(
        server: SandboxServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Problems a restart cannot fix end `play` with 3 or 4 (RestartPreventExitStatus)."""
    monkeypatch.setenv(TOKEN_ENV, server.add_account("human", bot=False))
    assert await kibitz("play", "--url", server.url) == ExitCode.TOKEN
    config = tmp_path / "book.yml"
    config.write_text(f"book: {{enabled: true, books: {{standard: ['{tmp_path / 'no.bin'}']}}}}\n")
    monkeypatch.setenv(TOKEN_ENV, server.add_account("MyBot", bot=True))
    assert await kibitz("play", "--config", str(config), "--url", server.url) == ExitCode.CONFIG
