"""Online block lists: parsing, conditional refreshes (ETag, Last-Modified), failures that
keep the last list, the cache across restarts, and the bot declining a listed challenger."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from bot.challenges.blocklists import BlockLists, parse_names
from sandbox.server import SandboxServer
from tests.bot.e2e_support import BOT, GUARD_S, make_config, quiet_logs, running_bot


def test_parse_names() -> None:
    text = "# spammers\nSpammer1\n\n  rude_bot  # since May\nnot a name\nx\n-dash\nOK-2\n"
    assert parse_names(text) == {"spammer1", "rude_bot", "x", "ok-2"}


@dataclass
class ListServer:
    """Serves block lists on loopback and records the conditional headers it got."""

    bodies: dict[str, str] = field(default_factory=dict)
    etags: dict[str, str] = field(default_factory=dict)
    modified: dict[str, str] = field(default_factory=dict)
    seen: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if_none = request.headers.get("If-None-Match")
        if_since = request.headers.get("If-Modified-Since")
        self.seen.append((name, if_none, if_since))
        assert "Authorization" not in request.headers
        if name in self.failing:
            return web.Response(status=503, text="down")
        etag, modified = self.etags.get(name), self.modified.get(name)
        if (etag is not None and if_none == etag) or \
                (modified is not None and if_since == modified):
            return web.Response(status=304)
        headers = {}
        if etag is not None:
            headers["ETag"] = etag
        if modified is not None:
            headers["Last-Modified"] = modified
        return web.Response(text=self.bodies[name], headers=headers)


@pytest.fixture
async def lists() -> AsyncIterator[ListServer]:
    served = ListServer()
    app = web.Application()
    app.router.add_get("/{name}.txt", served.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    served.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield served
    await runner.cleanup()


async def test_conditional_refreshes_and_failures(lists: ListServer, tmp_path: Path) -> None:
    lists.bodies = {"a": "alice\nbob\n", "b": "carol\n"}
    lists.etags["a"] = '"v1"'
    lists.modified["b"] = "Sun, 22 Nov 2026 04:00:00 GMT"
    blocks = BlockLists([f"{lists.url}/a.txt", f"{lists.url}/b.txt"], tmp_path)
    async with aiohttp.ClientSession() as session:
        await blocks.refresh(session)
        assert blocks.names == {"alice", "bob", "carol"}
        assert (blocks.fetches, blocks.not_modified) == (2, 0)
        assert lists.seen == [("a", None, None), ("b", None, None)]
        # Unchanged: the validators come back and the server answers 304 with no body.
        await blocks.refresh(session)
        assert (blocks.fetches, blocks.not_modified) == (2, 2)
        assert lists.seen[2:] == [("a", '"v1"', None), ("b", None, lists.modified["b"])]
        assert blocks.names == {"alice", "bob", "carol"}
        # Changed: the new list replaces the old one.
        lists.bodies["a"] = "dave\n"
        lists.etags["a"] = '"v2"'
        await blocks.refresh(session)
        assert blocks.names == {"dave", "carol"}
        # A list that cannot be fetched keeps its last names.
        lists.failing.add("b")
        await blocks.refresh(session)
        assert blocks.names == {"dave", "carol"}
    # After a restart: the cached names at once, and the validators for the next fetch.
    again = BlockLists([f"{lists.url}/a.txt", f"{lists.url}/b.txt"], tmp_path)
    assert again.names == {"dave", "carol"}
    assert again.lists[f"{lists.url}/a.txt"].etag == '"v2"'
    # A list no longer configured is dropped.
    assert BlockLists([f"{lists.url}/a.txt"], tmp_path).names == {"dave"}


async def test_the_bot_declines_a_challenger_on_an_online_list(lists: ListServer,
                                                               tmp_path: Path) -> None:
    quiet_logs()
    lists.bodies = {"spam": "Pest\n"}
    config = make_config(tmp_path)
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, online_block_lists=(f"{lists.url}/spam.txt",)))
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_account("pest", bot=False)
        server.add_account("friend", bot=False)
        async with running_bot(server, config):
            cache = tmp_path / "state" / "block_lists.json"  # written once the lists are in
            async with asyncio.timeout(GUARD_S):
                while not cache.exists():  # noqa: ASYNC110 - a file has no event to wait on
                    await asyncio.sleep(0.05)
            pest = await server.challenge("pest", BOT, 60, 0)
            friend = await server.challenge("friend", BOT, 60, 0)
            game_id = await server.wait_for_game("friend", timeout_s=GUARD_S)
            assert game_id == friend
            server.end_game(game_id, "draw")
            declined = server.lobby.challenges[pest]
            async with asyncio.timeout(GUARD_S):
                while declined.status == "created":  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            assert declined.status == "declined" and declined.decline_key == "generic"
