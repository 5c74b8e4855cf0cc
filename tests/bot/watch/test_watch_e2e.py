"""The status page, /metrics and /healthz of a bot playing on the sandbox: real HTTP on
loopback, the page's password, counters that agree with the sandbox's own records, and no
token anywhere."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.app import EXIT_CONFIG, run_bot
from bot.ops.config import parse_config
from bot.watch.server import Watch, WatchSettings
from sandbox.opponent import ChallengeSpec
from sandbox.server import GameRecord, SandboxServer
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    UNBUDGETED,
    UNLIMITED,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
    wait_for,
)

PASSWORD = "correct horse battery staple"
HOSTILE = '<img src=x onerror="document.title=\'pwned\'"><script>alert(1)</script>'


def bot_moves(record: GameRecord) -> int:
    """The bot's moves in a game (White moves on even plies)."""
    first = 0 if record.white.lower() == BOT else 1
    return len(record.moves[first::2])


def bot_result(record: GameRecord) -> str:
    if record.status in ("aborted", "noStart"):
        return "aborted"
    if record.winner is None:
        return "draw"
    ours = "white" if record.white.lower() == BOT else "black"
    return "win" if record.winner == ours else "loss"


async def first_event(session: aiohttp.ClientSession, url: str) -> tuple[str, str]:
    """The first server-sent event of the feed: its name and data."""
    async with session.get(url) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        name, data = "", ""
        async for raw in resp.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif not line and name:
                return name, data
    raise AssertionError("the feed ended before its first event")


async def test_page_metrics_and_health_agree_with_the_sandbox(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path, concurrency=2, max_move_s=0.02)
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        token = server.add_account(BOT, bot=True)
        watch = Watch(WatchSettings("127.0.0.1", 0, PASSWORD), base_url=server.url, token=token)
        async with running_bot(server, config, token=token, timings=UNBUDGETED,
                               watch=watch) as run:
            base = f"http://127.0.0.1:{watch.port}"
            auth = basic("anyone", PASSWORD)
            await server.start_opponent("alice", challenge=ChallengeSpec(BOT, 60, 0,
                                                                         repeat=False), seed=3)
            # Carol asks for a variant the built-in engine does not play: declined.
            server.add_account("carol", bot=False)
            declined = await server.challenge("carol", BOT, 60, 0, variant="horde")
            await wait_for(lambda: server.lobby.challenges[declined].status == "declined")
            # Mallory, driven by the test, says something hostile, makes a move and resigns.
            mallory = server.add_account("mallory", bot=False)
            mallory_game = await server.challenge("mallory", BOT, 60, 0, color="white")
            await wait_for(lambda: server.lobby.challenges[mallory_game].status == "accepted")
            await server.wait_for_game("mallory")
            # Said once the bot has answered a move (its game stream is open: lila replays no
            # chat), and seen by it before its next answer (one stream, in order).
            for ply, uci in enumerate(("e2e4", "d2d4")):
                assert await post_as(server, mallory,
                                     f"/api/board/game/{mallory_game}/move/{uci}") == 200
                await wait_for(lambda: len(server.game_record(mallory_game).moves)
                               >= 2 * ply + 2)  # noqa: B023
                if ply == 0:
                    await say(server, mallory, mallory_game, HOSTILE)
            assert await post_as(server, mallory,
                                 f"/api/board/game/{mallory_game}/resign") == 200
            async with aiohttp.ClientSession() as session:
                # Missing and wrong passwords are refused, on every route but /healthz.
                for path in ("/", "/app.js", "/events", "/metrics"):
                    async with session.get(base + path) as resp:
                        assert resp.status == 401, path
                        assert resp.headers["WWW-Authenticate"].startswith("Basic")
                    async with session.get(base + path, headers=basic("x", "wrong")) as resp:
                        assert resp.status == 401, path
                async with session.get(base + "/healthz") as resp:
                    assert resp.status == 200, await resp.text()

                def bot_records() -> list[GameRecord]:
                    return [r for r in server.game_records()
                            if BOT in (r.white.lower(), r.black.lower())]

                await wait_for(lambda: len(bot_records()) == 2)  # the two games, then their ends
                records = bot_records()
                ended = [await server.wait_for_game_end(r.id, 120) for r in records]
                await run.done_with(r.id for r in ended)

                pages: dict[str, str] = {}
                for path in ("/", "/app.js", "/app.css", "/metrics", "/healthz"):
                    async with session.get(base + path, headers=auth) as resp:
                        assert resp.status == 200, path
                        pages[path] = await resp.text()
                        if path != "/healthz":
                            assert "default-src 'none'" in \
                                resp.headers["Content-Security-Policy"]
                name, data = await _hello(base, auth)
                pages["/events"] = data
        assert await asyncio.wait_for(run.task, GUARD_S) == 0

    assert name == "hello"
    hello = json.loads(data)
    finished = {card["id"]: card for card in hello["games"]}
    assert set(finished) == {r.id for r in ended}
    for record in ended:
        card = finished[record.id]
        assert card["finished"]["result"] == bot_result(record)
        assert card["finished"]["pgn"].endswith(f"/game/export/{record.id}")
        assert card["evals"], "no evaluation recorded"
    # Kept exactly as said: the page shows it as text (the browser test checks that).
    assert finished[mallory_game]["chat"] == [{"room": "player", "user": "mallory",
                                               "text": HOSTILE}]
    assert hello["service"]["event_stream"] == "connected"
    assert hello["service"]["games_finished"] == 2

    # /metrics, read by prometheus-client's own parser, agrees with the sandbox.
    families = {f.name: f for f in text_string_to_metric_families(pages["/metrics"])}

    def value(family: str, sample: str, **labels: str) -> float:
        return sum(s.value for s in families[family].samples
                   if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))

    assert value("kibitz_moves", "kibitz_moves_total") == sum(bot_moves(r) for r in ended)
    for result in {bot_result(r) for r in ended}:
        assert value("kibitz_games_finished", "kibitz_games_finished_total", result=result) \
            == sum(bot_result(r) == result for r in ended)
    assert value("kibitz_challenges", "kibitz_challenges_total", decision="accepted") == 2
    declined_key = server.lobby.challenges[declined].decline_key
    assert declined_key is not None
    assert value("kibitz_challenges", "kibitz_challenges_total", decision="declined") \
        == value("kibitz_challenges", "kibitz_challenges_total", decision="declined",
                 reason=declined_key) == 1
    (carol,) = [c for c in hello["service"]["challenges"] if c["challenger"] == "carol"]
    assert (carol["decision"], carol["reason"]) == ("declined", declined_key)
    assert value("kibitz_move_overhead_seconds", "kibitz_move_overhead_seconds_count") \
        == value("kibitz_moves", "kibitz_moves_total")
    assert value("kibitz_requests", "kibitz_requests_total", kind="move") \
        >= value("kibitz_moves", "kibitz_moves_total")
    assert value("kibitz_event_stream_connected", "kibitz_event_stream_connected") == 1
    assert value("kibitz_process_tree_memory_bytes", "kibitz_process_tree_memory_bytes") > 0
    assert value("kibitz_games_in_progress", "kibitz_games_in_progress") == 0
    for path, text in pages.items():
        assert token not in text, f"the token is in {path}"


async def say(server: SandboxServer, token: str, game_id: str, text: str) -> None:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session, \
            session.post(f"{server.url}/api/board/game/{game_id}/chat",
                         data={"room": "player", "text": text}) as resp:
        assert resp.status == 200, await resp.text()


def basic(user: str, password: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


async def _hello(base: str, auth: dict[str, str]) -> tuple[str, str]:
    async with aiohttp.ClientSession(headers=auth) as session:
        return await first_event(session, base + "/events")


async def test_healthz_is_503_once_the_event_stream_is_gone(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path)
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        token = server.add_account(BOT, bot=True)
        watch = Watch(WatchSettings("127.0.0.1", 0, None), base_url=server.url, token=token)
        async with running_bot(server, config, token=token, timings=UNBUDGETED,
                               watch=watch), aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{watch.port}/healthz"
            async with session.get(url) as resp:
                assert resp.status == 200
            # The event stream cannot be reopened: unhealthy until it can.
            server.fail(503, "/api/stream/event", count=None)
            server.drop_streams("event", BOT)
            await until_status(session, url, 503)
            server.clear_faults()
            await until_status(session, url, 200)
            async with session.get(f"http://127.0.0.1:{watch.port}/metrics") as resp:
                families = {f.name: f for f in text_string_to_metric_families(
                    await resp.text())}
            reconnects = families["kibitz_event_stream_reconnects"].samples[0].value
            assert reconnects >= 1


async def until_status(session: aiohttp.ClientSession, url: str, status: int) -> None:
    """Ask until the answer is `status` (the bot's state changes on its own loop)."""
    async with asyncio.timeout(GUARD_S):
        while True:
            async with session.get(url) as resp:
                if resp.status == status:
                    return
            await asyncio.sleep(0.1)

def test_beyond_loopback_without_a_password_the_bot_does_not_start(tmp_path: Path) -> None:
    config = parse_config(f'state_dir: "{tmp_path}"\nwatch: {{host: 0.0.0.0}}\n')
    code = asyncio.run(run_bot(config, url="http://127.0.0.1:9", token="lip_x",
                               handle_signals=False))
    assert code == EXIT_CONFIG
