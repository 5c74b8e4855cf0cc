"""Failures that must cost nothing, each injected on the sandbox: a chat that fails, a game
stream that ends mid-game, and the token that must never show, whatever fails."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot import cli
from bot.game.game import FINISHED
from bot.game.game import Game as BotGame
from bot.lichess.client import (
    OPTIONAL_RETRIES,
    Lichess,
    LichessError,
    RateLimited,
    RequestError,
    Unavailable,
)
from bot.ops.config import Config
from bot.ops.token import TOKEN_ENV
from bot.watch.server import Watch, WatchSettings
from sandbox.faults import RequestFault
from sandbox.games import Game as SandboxGame
from sandbox.lobby import Lobby, Quirks
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAST_TIMINGS,
    GUARD_S,
    assert_legal,
    bot_games,
    engine_command,
    make_config,
    quiet_logs,
    running_bot,
    strong_opponent,
    wait_for,
)
from tests.bot.recording_engine import Conversation, board_of, conversation
from tests.bot.test_bad_input_e2e import GarbageProxy
from tests.bot.test_challenge_rules_e2e import answered
from tests.bot.test_faults_e2e import assert_won, plies, start_games

CHAT = "/api/bot/game/*/chat"


async def _fired(fault: RequestFault, times: int) -> None:
    async with asyncio.timeout(GUARD_S):
        while fault.fired < times:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_a_failing_chat_never_delays_nor_loses_a_move(tmp_path: Path) -> None:
    """The PV goes to both rooms after every move (kibitz_every 1): its requests meet a 400
    (lila's answer to a line over 140 characters), a 500 and a dropped connection, each
    several times, then a 429 that holds the chat back for 30 s: the moves go on meanwhile
    and the game is won."""
    quiet_logs()
    timings = dataclasses.replace(FAST_TIMINGS, rate_limit_pause_s=30.0)
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path, concurrency=1),
                               timings=timings) as run:
            # An engine rival: the game outlasts the phases.
            await server.start_opponent("rival0", engine=strong_opponent(), movetime_s=0.05,
                                        challenge=ChallengeSpec(BOT, 300, 0, repeat=False))
            (game_id,) = await bot_games(server, 1, GUARD_S)
            assert await plies(server, game_id, 2)
            # One fault after the other, each waited for; the moves go on meanwhile.
            faults = []
            injections: tuple[Callable[[], RequestFault], ...] = (
                lambda: server.fail(400, CHAT, count=2),
                lambda: server.fail(500, CHAT, count=3),
                lambda: server.reset(CHAT, count=3))
            for inject in injections:
                faults.append(inject())
                await _fired(faults[-1], faults[-1].count or 1)
            limited = server.rate_limit(CHAT, count=None)
            await _fired(limited, 1)
            at = len(server.game_record(game_id).moves)
            # The chat now waits out its 429 (30 s); no move waits with it.
            if await plies(server, game_id, at + 4):
                assert limited.fired == 1
            server.clear_faults()
            if not server.game_record(game_id).finished:
                server.end_game(game_id, "draw")
            record = await server.wait_for_game_end(game_id, 60)
        assert run.task.result() == 0
    assert_legal(record)
    # Not lost on time while its chat failed.
    assert record.status != "outoftime"
    assert run.metrics.rejected_moves == 0


# Each failure of one chat line, the requests lila may see for it at most, and what the
# client raises: a 5xx or a dropped connection earns OPTIONAL_RETRIES retries, a 400 (a line
# over 140 characters: the sandbox's own answer, as lila's form) and a 429 none.
CHAT_FAILURES = [
    ("500", 1 + OPTIONAL_RETRIES, Unavailable),
    ("reset", 1 + OPTIONAL_RETRIES, Unavailable),
    ("400", 1, RequestError),
    ("429", 1, RateLimited),
]


@pytest.mark.parametrize(("failure", "most", "raised"), CHAT_FAILURES,
                         ids=[f[0] for f in CHAT_FAILURES])
async def test_one_failing_chat_line_costs_at_most_a_few_requests(
        failure: str, most: int, raised: type[LichessError]) -> None:
    """A chat line that keeps failing is given up after a bounded number of requests,
    counted by the sandbox on the chat path; a 429 pauses the chat without a retry."""
    async with SandboxServer(keepalive_s=0.3) as server:
        token = server.add_account(BOT, bot=True)
        server.add_account("rival", bot=False)
        game_id = await server.pair(BOT, "rival")
        counter = server.delay(0.0, CHAT)  # fires on every chat request: counts them
        text = "gl hf"
        if failure == "500":
            server.fail(500, CHAT, count=None)
        elif failure == "reset":
            server.reset(CHAT, count=None)
        elif failure == "429":
            server.rate_limit(CHAT, count=None)
        else:
            text = "x" * 141
        async with Lichess(server.url, token, timings=FAST_TIMINGS) as client:
            with pytest.raises(raised):
                await client.chat(game_id, "player", text)
            paused = client.pauses_s()
    assert counter.fired == most
    assert ("chat" in paused) == (failure == "429")


async def test_a_game_stream_that_ends_mid_game_is_reopened_and_the_game_played_on(
        tmp_path: Path) -> None:
    """lila closes a game stream (a deploy, a proxy) while the game goes on: the bot opens
    it again and plays on, in time."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        async with running_bot(server, make_config(tmp_path, concurrency=1)) as run:
            (game_id,) = await start_games(server, 1)
            for _ in range(3):
                at = len(server.game_record(game_id).moves)
                if not await plies(server, game_id, at + 2):
                    break
                server.drop_streams("game", BOT)
                if not await plies(server, game_id, at + 6):
                    break
            record = await server.wait_for_game_end(game_id, 60)
        assert run.task.result() == 0
    assert_won(record)
    assert_legal(record)


async def test_the_token_never_shows_whatever_fails(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every error path a game reaches (4xx and 5xx replies, 429s, dropped connections,
    dropped streams) and the status page and /metrics: the token appears nowhere."""
    quiet_logs()
    crash: list[bool] = []
    on_state = BotGame._on_state

    def faulty(self: BotGame, state: Any, received: float) -> None:
        if crash:  # a bug in the game: its traceback is logged, the game resigned
            raise RuntimeError("a bug in one game")
        on_state(self, state, received)

    monkeypatch.setattr(BotGame, "_on_state", faulty)
    async with SandboxServer(keepalive_s=0.3) as server:
        token = server.add_account(BOT, bot=True)
        config = make_config(tmp_path, concurrency=1)
        watch = Watch(WatchSettings("127.0.0.1", 0, None), base_url=server.url, token=token)
        with caplog.at_level(logging.DEBUG):
            async with running_bot(server, config, token=token, watch=watch):
                (game_id,) = await start_games(server, 1)
                assert await plies(server, game_id, 2)
                server.fail(400, CHAT, count=2)
                server.fail(500, "/api/bot/game/*/move/*", count=2)
                server.rate_limit(CHAT, count=1, html=True)
                server.reset("/api/bot/game/*/move/*", count=1)
                server.fail(503, "/api/stream/event", count=1)
                server.drop_streams("event", BOT)
                server.drop_streams("game", BOT)
                at = len(server.game_record(game_id).moves)
                await plies(server, game_id, at + 8)
                pages = await _pages(watch)
                server.clear_faults()
                crash.append(True)
                await server.wait_for_game_end(game_id, 60)
        # check-config with the token tested, against failing and refusing answers.
        monkeypatch.setenv(TOKEN_ENV, token)
        refusals: tuple[Callable[[], RequestFault], ...] = (
            lambda: server.fail(500, "/api/token/test", count=None),
            lambda: server.fail(401, "/api/account", count=None),
            lambda: server.reset("/api/token/test", count=None))
        for fault in refusals:
            fault()
            await asyncio.to_thread(cli.run, ["check-config", "--check-token", "--url",
                                              server.url])
            server.clear_faults()
    captured = capsys.readouterr()
    seen = caplog.text + captured.out + captured.err + pages + _files_text(tmp_path)
    # The error paths were reached: lila's error bodies are echoed, the pages were read.
    assert "Injected fault: HTTP 500" in seen and "kibitz_" in pages
    assert "Traceback" in seen and "a bug in one game" in seen
    assert token not in seen
    assert "Bearer" not in seen


def _files_text(root: Path) -> str:
    """Every file the bot wrote (state, PGNs, logs)."""
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


async def _pages(watch: Watch) -> str:
    """The status page's first event, /metrics and /healthz, as the bot serves them."""
    base = f"http://127.0.0.1:{watch.port}"
    texts = []
    async with aiohttp.ClientSession() as session:
        for path in ("/metrics", "/healthz"):
            async with session.get(base + path) as resp:
                texts.append(await resp.text())
        async with session.get(base + "/events") as resp, asyncio.timeout(GUARD_S):
            while (line := await resp.content.readline()).strip() or not texts[-1]:
                texts.append(line.decode(errors="replace"))
    return "".join(texts)


OPTIONAL_KEYS = frozenset({"title", "rating", "provisional", "perf"})


def _strip(value: Any) -> Any:
    """The value with every optional key above removed, at every depth."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in OPTIONAL_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


class StrippingProxy(GarbageProxy):
    """Forwards to the sandbox; every stream line loses its optional fields (a challenge's,
    a gameStart's and a gameFull's `title`, `rating`, `provisional`, `perf`)."""

    async def relay(self, request: web.Request, lines: aiohttp.StreamReader,
                    response: web.StreamResponse) -> None:
        async for line in lines:
            if line.strip():
                stripped = _strip(json.loads(line))
                self.injected += stripped != json.loads(line)
                line = (json.dumps(stripped) + "\n").encode()
            await response.write(line)


async def test_events_without_their_optional_fields_are_played_not_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A challenge, a gameStart and a gameFull with no title, rating, provisional nor perf
    (all optional in lila's JSON): the challenge is judged, the game played to its end."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        proxy = StrippingProxy(server.url)
        url = await proxy.start()
        try:
            with caplog.at_level(logging.WARNING):
                async with running_bot(server, make_config(tmp_path, concurrency=1),
                                       url=url) as run:
                    await server.start_opponent(
                        "rival", seed=4, challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
                    (game_id,) = await bot_games(server, 1)
                    record = await server.wait_for_game_end(game_id, 60)
                    await run.done_with([game_id])
        finally:
            await proxy.stop()
    assert run.task.result() == 0
    assert proxy.injected > 3  # the challenge, gameStart, gameFull and gameFinish lost fields
    assert_legal(record)
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_burst_of_challenges_never_makes_more_games_than_slots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six people challenge at once a bot of two slots: two games start, never more; the
    four left waiting are declined "later" when the bot stops."""
    quiet_logs()
    most = 0
    start_game = Lobby.start_game

    def counting(lobby: Lobby, *args: Any, **kwargs: Any) -> SandboxGame:
        nonlocal most
        game = start_game(lobby, *args, **kwargs)
        bot = lobby.accounts.by_name(BOT)
        assert bot is not None
        most = max(most, len(lobby.ongoing(bot)))
        return game

    monkeypatch.setattr(Lobby, "start_game", counting)
    async with SandboxServer(keepalive_s=0.3) as server:
        people = [f"person{i}" for i in range(6)]
        for name in people:
            server.add_account(name, bot=False)
        async with running_bot(server, make_config(tmp_path, concurrency=2)):
            ids = await asyncio.gather(*(server.challenge(p, BOT, 180, 2, color="white")
                                         for p in people))
            challenges = [server.lobby.challenges[i] for i in ids]
            async with asyncio.timeout(GUARD_S):
                while sum(answered(c) == "accepted" for c in challenges) < 2:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        answers = sorted(str(answered(c)) for c in challenges)
    assert most == 2
    assert answers == ["accepted"] * 2 + ["later"] * 4


RECORDING_ENGINE = str(Path(__file__).with_name("recording_engine.py"))


def recorded(config: Config, log_dir: Path) -> Config:
    """`config` with its engine run through the recorder, each process logging to log_dir."""
    command = (sys.executable, RECORDING_ENGINE, str(log_dir), *engine_command())
    return dataclasses.replace(config, engine=dataclasses.replace(config.engine,
                                                                  command=command))


WARM_UP_POSITION = "position startpos"  # the pool's first search, before any game


def engines_recorded(log_dir: Path) -> list[tuple[int, Conversation, bool]]:
    """Each engine's process, its conversation, and whether the bot finished starting it:
    sent it more than `uci` (its options, a search). A stop that lands while a spare engine
    starts (its `uci` not yet answered) kills it, as start_engine does with any start cut
    short: it is never told `quit`."""
    found = []
    for log in sorted(log_dir.glob("*.log")):
        sent = sum(line.startswith("> ") for line in log.read_text().splitlines())
        found.append((int(log.stem), conversation(log), sent > 1))
    return found


def gone(pid: int) -> bool:
    """The process has ended: reaped, or a zombie waiting to be."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


async def assert_no_engine_left_searching(log_dir: Path, *, bot_stopped: bool) -> None:
    """Every `go` any engine was sent was answered (its `bestmove` came, after a `stop` if
    it was cut short), none on a position without a legal move; every engine that searched
    for a game has quit and is gone, and once the bot has stopped, every engine (one whose
    start the stop cut short is killed: gone, with nothing to say)."""
    engines = engines_recorded(log_dir)
    searches = [s for _, talk, _ in engines for s in talk.searches]
    assert searches, "no engine was asked to search"
    for search in searches:
        assert search.answered, f"a search never answered: {search}"
        assert any(board_of(search.position).legal_moves), f"a finished position: {search}"
    for pid, talk, started in engines:
        played = any(s.position != WARM_UP_POSITION for s in talk.searches)
        if bot_stopped and not played and not started:
            await wait_for(functools.partial(gone, pid))
        elif played or bot_stopped:
            assert talk.quit and talk.exited, f"an engine still running: {talk}"


async def test_end_of_game_races_end_each_game_once_and_cleanly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Every ending at once: a `started` gameState with the last move (the bot to move on a
    finished position, lichess-bot#1067), then the final one, and the gameFinish before
    both. Each game ends once, recorded as finished, with no error; no engine searches on
    after its game: each `go` answered, each game's engine released."""
    quiet_logs()
    quirks = Quirks(split_final_state=True, finish_first=True)
    engines = tmp_path / "engines"
    async with SandboxServer(keepalive_s=0.3, quirks=quirks) as server:
        with caplog.at_level(logging.WARNING):
            async with running_bot(server, recorded(make_config(tmp_path, concurrency=2),
                                                    engines)) as run:
                game_ids = await start_games(server, 2)
                records = [await server.wait_for_game_end(g, 60) for g in game_ids]
                await run.done_with(game_ids)
                await assert_no_engine_left_searching(engines, bot_stopped=False)
        assert run.task.result() == 0
    await assert_no_engine_left_searching(engines, bot_stopped=True)
    for record in records:
        assert_legal(record)
    outcomes = sorted((o.game_id, o.reason) for o in run.metrics.games)
    assert outcomes == sorted((g, "finished") for g in game_ids)
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# Black to play 2...Qh4#: the bot, White, is mated by the move it receives.
FOOLS_MATE_FEN = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"


async def test_a_mate_shown_first_as_started_never_reaches_the_engine(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The opponent mates: lila shows the mating move in a `started` gameState first, the
    bot to move on a mated board, then the final one and the gameFinish (before both). The
    bot sends no `go` for the finished position, the game ends with no error, and its
    engine is released with no search left running."""
    quiet_logs()
    quirks = Quirks(split_final_state=True, finish_first=True)
    engines = tmp_path / "engines"
    async with SandboxServer(keepalive_s=0.3, quirks=quirks) as server:
        server.add_account("rival", bot=False)
        with caplog.at_level(logging.WARNING):
            async with running_bot(server, recorded(make_config(tmp_path, concurrency=1),
                                                    engines)) as run:
                game_id = await server.pair(BOT, "rival", fen=FOOLS_MATE_FEN)
                async with asyncio.timeout(GUARD_S):
                    while not server.open_streams("game", BOT):  # noqa: ASYNC110
                        await asyncio.sleep(0.01)
                server.game(game_id).move(server.account("rival"), "d8h4")
                record = await server.wait_for_game_end(game_id, 60)
                await run.done_with([game_id])
                outcome = run.metrics.games[-1]
                await assert_no_engine_left_searching(engines, bot_stopped=False)
        assert run.task.result() == 0
    assert record.status == "mate"
    assert (outcome.game_id, outcome.reason) == (game_id, FINISHED)
    await assert_no_engine_left_searching(engines, bot_stopped=True)
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
