"""Bad input from the server: garbage lines in the streams, unknown event types, malformed
events, and the odd end-of-game orderings Lichess has shown. Logged and skipped, never a crash;
every game still ends."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from sandbox.lobby import Quirks
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    assert_legal,
    bot_games,
    make_config,
    quiet_logs,
    running_bot,
)

EVENT_GARBAGE = [b"this is not json\n", b'{"type":"mystery","x":1}\n', b"[1,2,3]\n",
                 b'{"type":"challenge","challenge":{"id":5}}\n', b'{"no":"type"}\n',
                 b'{"type":"gameStart","game":"x"}\n', b'{"truncated": \n']
GAME_GARBAGE = [b"<html>oops</html>\n", b'{"type":"gameState","moves":7}\n',
                b'{"type":"chatLine","room":"player"}\n', b'{"type":"mystery"}\n',
                b'{"type":"opponentGone","gone":"maybe"}\n', b"\xff\xfe\n"]


class GarbageProxy:
    """Forwards everything to the sandbox; puts garbage between the lines of every stream."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.injected = 0
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        self._session = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.forward)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        body = await request.read()
        async with self._session.request(
                request.method, self.upstream + request.path_qs, headers=headers, data=body,
                timeout=aiohttp.ClientTimeout(total=None)) as upstream:
            if "ndjson" not in upstream.headers.get("Content-Type", ""):
                return web.Response(status=upstream.status, body=await upstream.read(),
                                    content_type=upstream.content_type)
            response = web.StreamResponse(status=upstream.status,
                                          headers={"Content-Type": "application/x-ndjson"})
            await response.prepare(request)
            with contextlib.suppress(aiohttp.ClientError, ConnectionResetError):
                await self.relay(request, upstream.content, response)
            return response

    async def relay(self, request: web.Request, lines: aiohttp.StreamReader,
                    response: web.StreamResponse) -> None:
        """Each stream line as it came, then a garbage line after every non-empty one."""
        garbage = itertools.cycle(
            EVENT_GARBAGE if request.path == "/api/stream/event" else GAME_GARBAGE)
        async for line in lines:
            await response.write(line)
            if line.strip():
                await response.write(next(garbage))
                self.injected += 1


async def test_garbage_in_every_stream_is_skipped(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3) as server:
        proxy = GarbageProxy(server.url)
        proxy_url = await proxy.start()
        try:
            async with running_bot(server, make_config(tmp_path), url=proxy_url) as run:
                await server.start_opponent("rival", seed=9,
                                            challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
                (game_id,) = await bot_games(server, 1)
                record = await server.wait_for_game_end(game_id, 60)
        finally:
            await proxy.stop()
    assert run.task.result() == 0
    assert proxy.injected > 10
    assert_legal(record)
    assert record.status == "mate"
    assert "skipped a malformed" in caplog.text and "not JSON" in caplog.text


@pytest.mark.parametrize("quirk", ["split_final_state", "stale_final_state", "omit_final_state"])
async def test_odd_game_endings_still_end_the_game(tmp_path: Path, quirk: str) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.3, quirks=Quirks(**{quirk: True})) as server:
        async with running_bot(server, make_config(tmp_path)) as run:
            await server.start_opponent("rival", seed=2,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            record = await server.wait_for_game_end(game_id, 60)
            async with asyncio.timeout(GUARD_S):
                while not run.metrics.games:  # noqa: ASYNC110 (the bot's side of the ending)
                    await asyncio.sleep(0.05)
        assert run.task.result() == 0
    assert_legal(record)
    (outcome,) = run.metrics.games
    assert outcome.game_id == game_id and outcome.reason == "finished"
