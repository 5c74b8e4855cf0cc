"""Our Lichess client against a scripted HTTP server on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bot.lichess.client import (
    COMMAND_AGING_S,
    USER_AGENT,
    AuthError,
    ClientTimings,
    Lichess,
    LichessError,
    Priority,
    RateLimited,
    Reply,
    RequestBudget,
    RequestError,
    StreamOpened,
    Unavailable,
    backoff_delay_s,
    classify,
    error_message,
    rate_limit_wait_s,
)

TIMINGS = ClientTimings(request_timeout_s=2.0, event_stream_silence_s=0.5,
                        game_stream_silence_s=0.5,
                        rate_limit_pause_s=0.6, backoff_base_s=0.02, backoff_cap_s=0.1,
                        retry_deadline_s=3.0)


class Script:
    """What the server answers: a queue of (status, body, headers) per path; 200 {} after."""

    def __init__(self) -> None:
        self.replies: dict[str, list[tuple[int, str, dict[str, str]]]] = {}
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.stream_lines: list[bytes] = []
        self.stream_opens = 0
        self.silent = False

    async def command(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, request.path, dict(request.headers)))
        queue = self.replies.get(request.path, [])
        if queue:
            status, body, headers = queue.pop(0)
            return web.Response(status=status, text=body, headers=headers)
        return web.json_response({"ok": True})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        self.stream_opens += 1
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        if self.silent:
            await asyncio.sleep(30)
        for line in self.stream_lines:
            await response.write(line)
        return response


@pytest.fixture
async def server() -> AsyncIterator[tuple[Script, str]]:
    script = Script()
    app = web.Application()
    app.router.add_get("/stream", script.stream)
    app.router.add_route("*", "/{tail:.*}", script.command)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield script, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_requests_carry_the_token_and_our_user_agent(server: tuple[Script, str]) -> None:
    script, url = server
    async with Lichess(url, "secret_token", timings=TIMINGS) as client:
        await client.move("game1", "e2e4", offering_draw=True)
    method, path, headers = script.seen[0]
    assert (method, path) == ("POST", "/api/bot/game/game1/move/e2e4")
    assert headers["Authorization"] == "Bearer secret_token"
    assert headers["User-Agent"] == USER_AGENT and USER_AGENT.startswith("Kibitz/")


async def test_5xx_and_network_errors_are_retried(server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/bot/game/g/move/e2e4"] = [(502, "bad gateway", {}),
                                                   (503, "<html>busy</html>", {})]
    async with Lichess(url, "t", timings=TIMINGS) as client:
        await client.move("g", "e2e4")
    assert len(script.seen) == 3


async def test_5xx_forever_gives_up_at_the_deadline(server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/bot/game/g/abort"] = [(500, "x", {})] * 1000
    async with Lichess(url, "t", timings=TIMINGS) as client:
        # Without the deadline the 1000 errors would take well over a minute of back-offs
        # (the 30 s is a guard, not a measure).
        with pytest.raises(Unavailable, match="HTTP 500"):
            await asyncio.wait_for(client.request("POST", "/api/bot/game/g/abort", kind="x",
                                                  deadline_s=0.5), 30)
    assert len(script.seen) < 1000


async def test_4xx_is_final_and_names_the_servers_reason(server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/bot/game/g/move/e2e5"] = [
        (400, json.dumps({"error": "Not your turn, or game already over"}), {})]
    async with Lichess(url, "t", timings=TIMINGS) as client:
        with pytest.raises(RequestError, match="Not your turn") as caught:
            await client.move("g", "e2e5")
    assert caught.value.status == 400 and len(script.seen) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_401_and_403_are_fatal(server: tuple[Script, str], status: int) -> None:
    script, url = server
    script.replies["/api/account"] = [(status, json.dumps({"error": "No such token"}), {})]
    async with Lichess(url, "t", timings=TIMINGS) as client:
        with pytest.raises(AuthError, match="No such token"):
            await client.account()


async def test_429_pauses_only_that_kind_of_request(server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/bot/game/a/move/e2e4"] = [(429, "<html>Too many requests</html>", {})]
    # A pause far longer than one request on loopback, even on a busy machine.
    timings = dataclasses.replace(TIMINGS, move_retry_s=3.0, retry_deadline_s=10.0)
    async with Lichess(url, "t", timings=timings) as client:
        start = time.monotonic()
        slow = asyncio.ensure_future(client.move("a", "e2e4"))
        async with asyncio.timeout(5):
            while not any(path.endswith("/a/move/e2e4") for _, path, _ in script.seen):  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # until the 429 is served
        await client.move("b", "d2d4")  # another game's move: not held up
        assert not slow.done()
        await slow
        blocked_done = time.monotonic() - start
    assert blocked_done >= timings.move_retry_s  # a move's 429 pause, never cut short


def test_rate_limit_wait_reads_the_body_and_headers() -> None:
    assert rate_limit_wait_s("<html>", {}, 60) == 60
    assert rate_limit_wait_s("<html>", {"Retry-After": "90"}, 60) == 90
    body = json.dumps({"error": "x", "ratelimit": {"key": "bot.vsBot.day", "seconds": 86398}})
    assert rate_limit_wait_s(body, {}, 60) == 86398
    assert rate_limit_wait_s(json.dumps({"ratelimit": {"seconds": 5}}), {}, 60) == 60


def test_error_messages_from_json_and_html() -> None:
    assert error_message('{"error":"No such game"}') == "No such game"
    assert error_message('{"error":{"clock.limit":["Invalid value"]}}').startswith('{"clock')
    assert error_message("<html>\n<b>Too  many</b></html>") == "<html> <b>Too many</b></html>"
    assert error_message("") == "(empty body)"


def test_backoff_is_jittered_and_capped() -> None:
    delays = [backoff_delay_s(n, 0.25, 15.0) for n in range(12) for _ in range(20)]
    assert all(0.125 <= d <= 15.0 for d in delays)
    assert max(backoff_delay_s(20, 0.25, 15.0) for _ in range(50)) <= 15.0
    assert len({round(backoff_delay_s(3, 0.25, 15.0), 6) for _ in range(20)}) > 1


async def test_stream_skips_keep_alives_and_malformed_lines(server: tuple[Script, str]) -> None:
    script, url = server
    script.stream_lines = [b"\n", b'{"type":"a"}\n', b"not json\n", b"\n", b'{"broken": \n',
                           b'{"type":"b"}\n', b"[1,2]\n"]
    got: list[Any] = []
    async with Lichess(url, "t", timings=TIMINGS) as client:
        async for item in client.stream_once("/stream", kind="s"):
            got.append(item)
    assert got == [{"type": "a"}, {"type": "b"}, [1, 2]]


async def test_follow_reopens_a_stream_that_ends_or_falls_silent(
        server: tuple[Script, str]) -> None:
    script, url = server
    script.stream_lines = [b'{"n":1}\n']
    events: list[Any] = []
    async with Lichess(url, "t", timings=TIMINGS) as client:
        async with asyncio.timeout(5):
            async for item in client.follow("/stream", kind="s"):
                events.append(item)
                if len([e for e in events if e == {"n": 1}]) == 2:
                    script.silent = True
                if isinstance(item, StreamOpened) and item.attempt == 3:
                    break
    assert [e for e in events if isinstance(e, StreamOpened)] == [
        StreamOpened(0), StreamOpened(1), StreamOpened(2), StreamOpened(3)]
    assert script.stream_opens == 3  # the fourth open is about to happen


class FakeClock:
    """Time that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_s += seconds


async def test_the_budget_allows_a_burst_then_keeps_the_rate() -> None:
    clock = FakeClock()
    budget = RequestBudget(per_minute=600, burst=2, now=clock.now, sleep=clock.sleep)
    waits = [await budget.take(Priority.MOVE) for _ in range(6)]
    assert waits[:2] == [0.0, 0.0]
    assert all(wait > 0 for wait in waits[2:])
    assert clock.now_s == pytest.approx(0.4)  # 4 more at 10 a second


async def test_moves_go_first_and_chat_is_dropped_when_the_budget_is_tight() -> None:
    clock = FakeClock()
    budget = RequestBudget(per_minute=60, burst=10, move_reserve=2, chat_reserve=5,
                           now=clock.now, sleep=clock.sleep)
    assert [budget.try_take(Priority.CHAT) for _ in range(6)] == [True] * 5 + [False]
    assert [budget.try_take(Priority.COMMAND) for _ in range(4)] == [True] * 3 + [False]
    assert [budget.try_take(Priority.MOVE) for _ in range(3)] == [True, True, False]
    assert clock.slept == []
    await budget.take(Priority.COMMAND)  # waits for the moves' reserve, or until it aged
    assert clock.now_s == pytest.approx(min(3.0, COMMAND_AGING_S))


async def test_a_command_is_not_starved_by_a_stream_of_moves() -> None:
    clock = FakeClock()
    budget = RequestBudget(per_minute=60, burst=10, move_reserve=4, now=clock.now,
                           sleep=clock.sleep)
    while budget.try_take(Priority.MOVE):
        pass
    command = asyncio.ensure_future(budget.take(Priority.COMMAND))
    while not command.done():  # a move takes every token the moment it refills
        await budget.take(Priority.MOVE)
        await asyncio.sleep(0)
    assert await command == pytest.approx(COMMAND_AGING_S, abs=1.0)


async def test_a_429_never_sleeps_past_the_requests_deadline(server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/challenge/c1/accept"] = [(429, "<html>Too many requests</html>", {})]
    timings = ClientTimings(rate_limit_pause_s=3600.0, backoff_base_s=0.02)
    async with Lichess(url, "t", timings=timings) as client:
        with pytest.raises(RateLimited):
            await client.accept_challenge("c1")
        with pytest.raises(RateLimited):  # still blocked: raised without a request or a sleep
            await asyncio.wait_for(client.accept_challenge("c2"), 1.0)
        await client.decline_challenge("c2", "later")  # another endpoint: not blocked
    assert [path for _m, path, _h in script.seen] == ["/api/challenge/c1/accept",
                                                      "/api/challenge/c2/decline"]


async def test_our_bot_game_cap_does_not_block_accepting(server: tuple[Script, str]) -> None:
    script, url = server
    body = json.dumps({"error": "You played 100 games against other bots today",
                       "ratelimit": {"key": "bot.vsBot.day", "seconds": 80000}})
    script.replies["/api/challenge/bot1/accept"] = [(429, body, {})]
    async with Lichess(url, "t", timings=TIMINGS) as client:
        with pytest.raises(RateLimited) as caught:
            await client.accept_challenge("bot1")
        assert (caught.value.key, caught.value.wait_s) == ("bot.vsBot.day", 80000)
        await asyncio.wait_for(client.accept_challenge("human1"), 1.0)
    assert len(script.seen) == 2


async def test_a_429_on_a_move_is_retried_within_the_move_retry(
        server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/bot/game/g/move/e2e4"] = [(429, "<html>Too many requests</html>", {})]
    timings = ClientTimings(rate_limit_pause_s=60.0, move_retry_s=0.05)
    async with Lichess(url, "t", timings=timings) as client:
        await asyncio.wait_for(client.move("g", "e2e4"), 5.0)
    assert len(script.seen) == 2


def chat_budget(per_minute: int, burst: int) -> ClientTimings:
    """A budget whose last two requests are kept for moves and commands, not PV lines."""
    return ClientTimings(requests_per_minute=per_minute, request_burst=burst, move_reserve=1,
                         chat_reserve=2)


async def send_pvs(client: Lichess, room: str, count: int) -> list[bool]:
    return [await client.chat("g", room, f"PV {n}", droppable=True) for n in range(count)]


async def test_a_pv_line_is_held_and_merged_not_delayed_when_the_budget_is_tight(
        server: tuple[Script, str]) -> None:
    script, url = server
    async with Lichess(url, "t", timings=chat_budget(1, 4)) as client:
        sent = await send_pvs(client, "spectator", 4)
        await client.move("g", "e2e4")
        assert client._pending_chat == {("g", "spectator"): "PV 3"}  # held, merged
    assert sent == [True, True, False, False]
    assert client.budget.dropped_chat == 1  # PV 2, replaced by PV 3
    assert [p for _m, p, _h in script.seen][-1] == "/api/bot/game/g/move/e2e4"


async def test_a_held_pv_line_forgotten_while_it_waits_is_not_sent(
        server: tuple[Script, str]) -> None:
    script, url = server
    async with Lichess(url, "t", timings=chat_budget(60, 3)) as client:
        sent = await send_pvs(client, "player", 2)
        assert sent == [True, False] and client._chat_flushers
        await asyncio.sleep(0)  # the flusher now waits for room in the budget
        client.forget_held_chat("g")  # the game ended while its line waited for room
        await asyncio.wait_for(asyncio.gather(*client._chat_flushers), 30.0)
    assert [p for _m, p, _h in script.seen if p.endswith("/chat")] == ["/api/bot/game/g/chat"]


@pytest.mark.parametrize(("status", "reply"), [
    (200, Reply.OK), (204, Reply.OK), (400, Reply.REFUSED), (401, Reply.AUTH),
    (403, Reply.AUTH), (404, Reply.REFUSED), (429, Reply.RATE_LIMITED),
    (500, Reply.SERVER_ERROR), (503, Reply.SERVER_ERROR)])
def test_one_classification_of_http_statuses(status: int, reply: Reply) -> None:
    assert classify(status) is reply


async def test_challenge_commands_and_listings_use_their_lichess_paths(
        server: tuple[Script, str]) -> None:
    script, url = server
    script.replies["/api/challenge/some bot"] = [(200, json.dumps({"id": "c1"}), {}),
                                                   (200, json.dumps({"ok": True}), {})]
    script.replies["/api/account/playing"] = [(200, json.dumps({"nowPlaying": []}), {})]
    async with Lichess(url, "t", timings=TIMINGS) as client:
        form = {"rated": "false", "clock.limit": "60"}
        assert await client.create_challenge("some bot", form, kind="create",
                                             deadline_s=1.0) == "c1"
        with pytest.raises(LichessError, match="no id"):
            await client.create_challenge("some bot", form, kind="create", deadline_s=1.0)
        await client.cancel_challenge("c1")
        assert await client.playing(50) == {"nowPlaying": []}
    assert [(method, path) for method, path, _headers in script.seen] == [
        ("POST", "/api/challenge/some bot"), ("POST", "/api/challenge/some bot"),
        ("POST", "/api/challenge/c1/cancel"), ("GET", "/api/account/playing")]
