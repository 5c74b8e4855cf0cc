"""Fixtures: a sandbox on a free loopback port, on a clock the test moves itself, and
validating clients."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
import pytest

from sandbox.games import FirstMoveTimers
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from tests.sandbox.spec import GUARD_S, SpecClient

# The sandbox fixture runs on a ManualClock: its timers fire only when a test advances it.
KEEPALIVE_S = 0.2
CHALLENGE_EXPIRY_S = 5.0
GONE_AFTER_S = 0.1
CLAIM_WIN_AFTER_S = 0.3
FIRST_MOVE_S = 0.4


async def eventually(condition: Callable[[], bool], timeout_s: float = GUARD_S) -> None:
    """Wait until `condition()` holds (for state with no event to wait on)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


def short_first_move() -> FirstMoveTimers:
    short = {s: FIRST_MOVE_S for s in (
        "ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence")}
    return FirstMoveTimers(seconds_by_speed=short, tournament_seconds_by_speed=short)


@pytest.fixture
def clock() -> ManualClock:
    """The sandbox's time: game clocks, first-move timers, challenge expiry, opponentGone and
    the claim delay move only when the test calls `clock.advance(seconds)`."""
    return ManualClock()


@pytest.fixture
async def sandbox(clock: ManualClock) -> AsyncIterator[SandboxServer]:
    server = SandboxServer(keepalive_s=KEEPALIVE_S, challenge_expiry_s=CHALLENGE_EXPIRY_S,
                           gone_after_s=GONE_AFTER_S, gone_tick_s=GONE_AFTER_S,
                           claim_win_after_s=CLAIM_WIN_AFTER_S,
                           first_move=short_first_move(), clock=clock)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def client(sandbox: SandboxServer,
           http: aiohttp.ClientSession) -> Callable[[str | None], SpecClient]:
    """client(token) -> a SpecClient for that token (None: no Authorization header)."""
    return lambda token: SpecClient(sandbox.url, token, http)


@dataclass
class Duel:
    """A bot and a human, each with a validating client, and the sandbox they live on."""

    sandbox: SandboxServer
    bot: SpecClient
    human: SpecClient

    async def start_game(self, *, bot_color: str = "white", limit_s: int | None = 180,
                         increment_s: int = 2, days: int | None = None, fen: str | None = None,
                         variant: str = "standard") -> str:
        """The human challenges the bot through the API and the bot accepts; the game id."""
        form = {"color": "black" if bot_color == "white" else "white", "variant": variant}
        if limit_s is not None:
            form.update({"clock.limit": str(limit_s), "clock.increment": str(increment_s)})
        elif days is not None:
            form["days"] = str(days)
        if fen is not None:
            form["fen"] = fen
        reply = await self.human.post("/api/challenge/bot1", data=form)
        assert reply.status == 200, reply.text
        challenge_id = reply.json()["id"]
        accepted = await self.bot.post(f"/api/challenge/{challenge_id}/accept")
        assert accepted.status == 200, accepted.text
        return str(challenge_id)

    async def move(self, game_id: str, uci: str, *, who: str = "",
                   offering_draw: bool | None = None) -> None:
        """Play a move for whoever is to move (or for `who`), asserting it is accepted."""
        game = self.sandbox.game(game_id)
        if not who:
            who = "bot" if game.players[game.turn].bot else "human"
        client, api = (self.bot, "bot") if who == "bot" else (self.human, "board")
        query = "" if offering_draw is None else f"?offeringDraw={str(offering_draw).lower()}"
        reply = await client.post(f"/api/{api}/game/{game_id}/move/{uci}{query}")
        assert reply.status == 200, f"{uci}: {reply.text}"

    async def play(self, game_id: str, moves: str) -> None:
        for uci in moves.split():
            await self.move(game_id, uci)


@pytest.fixture
def duel(sandbox: SandboxServer, client: Callable[[str | None], SpecClient]) -> Duel:
    return Duel(sandbox, client(sandbox.add_account("bot1", bot=True)),
                client(sandbox.add_account("human1", bot=False)))
