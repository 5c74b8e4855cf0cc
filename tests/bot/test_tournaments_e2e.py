"""Arenas end to end: the real bot, the sandbox's arena on a clock the test moves, a person
and a second bot (sandbox players over HTTP)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import chess
import pytest
from aiohttp import web

from sandbox.accounts import Account
from sandbox.games import DRAW_OFFER_MIN_PLIES_NO_EARLY_DRAW as NO_EARLY_DRAW_PLIES
from sandbox.games import Game
from sandbox.routes import Api
from sandbox.server import HUMAN_ARENA_SCOPES, SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.bot.e2e_support import (
    BOT,
    FAKE_ENGINE,
    UNLIMITED,
    AlarmClock,
    make_config,
    quiet_logs,
    running_bot,
    wait_for,
)
from tests.bot.test_challenge_rules_e2e import answered

# Each step moves the sandbox's clock by this much, once every game has moved since the
# last step: clocks run down and the arena ends, and nobody loses on the first move.
STEP_S = 10.0
ARENA_MINUTES = 5
STARTS_IN_S = 60.0


def arena_config(tmp_path: Path, arena_id: str) -> str:
    return f"""
tournaments:
  arenas: [{arena_id}]
  poll_interval_s: 1
  join_before_s: 600
"""


async def step(server: SandboxServer, clock: ManualClock) -> None:
    """Move the clock once every game in progress has a move since the last step (both
    first moves for a new game), so time passes only while the players keep up."""
    ongoing = [g for g in server.lobby.games.values() if g.playing]
    plies = {g.id: g.plies for g in ongoing}
    await wait_for(lambda: all(not g.playing or g.plies > max(plies[g.id], 1)
                               for g in ongoing))
    clock.advance(STEP_S)


async def test_a_whole_arena_is_joined_played_and_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5-minute arena: the bot joins before the start, plays every pairing (its first
    move in time), never aborts nor offers a draw before move 31, withdraws at the end,
    and the standing it reports is the arena's."""
    quiet_logs()
    forbidden: list[str] = []
    abort, draw, move = Game.abort, Game.draw, Game.move

    def spy_abort(game: Game, account: Account) -> None:
        forbidden.append(f"{account.id} aborts {game.id}")
        abort(game, account)

    def spy_draw(game: Game, account: Account, accept: bool) -> None:
        if game.plies < NO_EARLY_DRAW_PLIES:
            forbidden.append(f"{account.id} draw/{accept} at ply {game.plies} in {game.id}")
        draw(game, account, accept)

    def spy_move(game: Game, account: Account, uci: str,
                 offering_draw: bool | None = None) -> None:
        if offering_draw and game.plies < NO_EARLY_DRAW_PLIES:
            forbidden.append(f"{account.id} offers a draw at ply {game.plies} in {game.id}")
        move(game, account, uci, offering_draw)

    monkeypatch.setattr(Game, "abort", spy_abort)
    monkeypatch.setattr(Game, "draw", spy_draw)
    monkeypatch.setattr(Game, "move", spy_move)
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(ArenaSpec(
            name="Kibitz Arena", clock_limit_s=60, increment_s=0, minutes=ARENA_MINUTES,
            starts_in_s=STARTS_IN_S))
        server.add_account("sparring", bot=False, scopes=HUMAN_ARENA_SCOPES)
        person = await server.start_opponent("sparring", movetime_s=0.01, seed=1)
        robo = await server.start_opponent("robo", bot=True, movetime_s=0.01, seed=2)
        assert await person.join_arena(arena_id) == 200
        assert await robo.join_arena(arena_id) == 200
        arena = server.arena(arena_id)
        config = make_config(tmp_path, arena_config(tmp_path, arena_id))
        watch = AlarmClock()
        async with running_bot(server, config, alarm_clock=watch):
            await wait_for(lambda: BOT in arena.players)
            assert arena.status == "created"  # joined before the start
            # The opponents are slow to start: past game.abort_after_s the bot would abort
            # a challenge game, but not an arena game.
            await person.hold_moves()
            await robo.hold_moves()
            # Lichess pairs only players who are there (on their event stream).
            await wait_for(lambda: {BOT, "sparring", "robo"} <= server.lobby.hub.online())
            clock.advance(STARTS_IN_S)
            first = server.game(arena.games[0])
            assert BOT in {p.id for p in first.players.values()}
            await wait_for(lambda: server.lobby.hub.watching(first.id, BOT)
                           and first.has_moved(chess.WHITE) == (first.players[
                               chess.WHITE].id == BOT))
            watch.advance(config.game.abort_after_s + 1)
            await watch.looked_at()
            person.release_moves()
            robo.release_moves()
            while arena.status != "finished":
                await step(server, clock)
            # A finished arena pairs nobody: lila takes the withdrawal as a no-op
            # (TournamentApi.withdraw), the bot's summary still says it left.
            # Games still running at the end go on, unscored: let them flag.
            while any(g.playing for g in server.lobby.games.values()):
                await step(server, clock)
            status_file = tmp_path / "state" / "tournaments" / "status.json"
            await wait_for(lambda: status_file.exists() and json.loads(
                status_file.read_text())[0]["done"])
            published = json.loads(status_file.read_text())[0]

        ours = [server.game(g) for g in arena.games
                if BOT in {p.id for p in server.game(g).players.values()}]
        assert len(ours) >= 2
        for game in ours:
            ours_color = chess.WHITE if game.players[chess.WHITE].id == BOT else chess.BLACK
            assert game.status not in ("aborted", "noStart") or game.winner == ours_color, \
                f"{game.id}: {game.status}"
            assert game.has_moved(ours_color)
        assert [f for f in forbidden if f.startswith(BOT)] == []
        player = arena.players[BOT]
        assert (published["score"], published["rank"], published["games"]) == (
            player.score, arena.rank_of(BOT), len(player.points))
        assert published["withdrawn"] is True


async def test_an_arena_that_refuses_bots_is_logged_once_and_challenges_go_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        arena_id = server.create_arena(ArenaSpec(allow_bots=False, starts_in_s=30))
        server.add_account("person", bot=False)
        config = make_config(tmp_path, arena_config(tmp_path, arena_id))
        with caplog.at_level(logging.INFO, logger="bot.tournaments"):
            async with running_bot(server, config):
                # Read in the arena's verdicts: no join is sent (lila would charge its
                # credits, then refuse: TournamentApi.join).
                await wait_for(lambda: "conditions refuse us" in caplog.text)
                challenge = server.lobby.challenges[
                    await server.challenge("person", BOT, 180, 2)]
                await wait_for(lambda: answered(challenge) == "accepted")
                server.end_game(challenge.id, "draw")
        refusals = [r for r in caplog.records if "conditions refuse us" in r.getMessage()]
        assert len(refusals) == 1
        assert "Bot players are not allowed" in refusals[0].getMessage()
        assert BOT not in server.arena(arena_id).players
        assert server.arenas.join_requests(BOT) == 0


def _fake_entry() -> str:
    command = ", ".join(f'"{part}"' for part in (sys.executable, FAKE_ENGINE, "none", "0"))
    return f"{{command: [{command}], first_move_s: 0.2, max_move_s: 0.05}}"


@pytest.mark.parametrize("opponent_is_bot", [True, False], ids=["bot", "person"])
async def test_an_arena_opponent_never_met_gets_the_engine_its_title_picks(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        opponent_is_bot: bool) -> None:
    """lila's gameStart names an arena opponent without a title, its gameFull with one: for
    an opponent it has never met, the `bot` rules pick the engine at gameFull, with no
    lookup (`/api/users/status`) to wait for before the game starts."""
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.engines.choice")
    lookups: list[str] = []
    users_status = Api.users_status

    async def spy_users_status(api: Api, request: web.Request) -> web.StreamResponse:
        lookups.append(request.query.get("ids", ""))
        return await users_status(api, request)

    monkeypatch.setattr(Api, "users_status", spy_users_status)
    clock = ManualClock()
    async with SandboxServer(keepalive_s=0.5, clock=clock, limits=UNLIMITED) as server:
        arena_id = server.create_arena(ArenaSpec(clock_limit_s=60, increment_s=0,
                                                 minutes=ARENA_MINUTES, starts_in_s=STARTS_IN_S))
        name = "robo" if opponent_is_bot else "sparring"
        if not opponent_is_bot:
            server.add_account(name, bot=False, scopes=HUMAN_ARENA_SCOPES)
        other = await server.start_opponent(name, bot=opponent_is_bot, movetime_s=0.01,
                                            seed=4)
        assert await other.join_arena(arena_id) == 200
        arena = server.arena(arena_id)
        config = make_config(tmp_path, arena_config(tmp_path, arena_id) + f"""
engines:
  default: anyone
  entries:
    anyone: {_fake_entry()}
    vsbot: {_fake_entry()}
    vshuman: {_fake_entry()}
  rules:
    - {{engine: vsbot, bot: true}}
    - {{engine: vshuman, bot: false}}
""")
        async with running_bot(server, config):
            await wait_for(lambda: BOT in arena.players)
            await wait_for(lambda: {BOT, name} <= server.lobby.hub.online())
            clock.advance(STARTS_IN_S)
            await wait_for(lambda: bool(arena.games))
            game_id = arena.games[0]
            await wait_for(lambda: f"game {game_id}: {name} is" in caplog.text)
    expected = "vsbot" if opponent_is_bot else "vshuman"
    kind = "a bot" if opponent_is_bot else "no bot"
    assert f"game {game_id}: {name} is {kind}: engine {expected}" in caplog.text
    assert [ids for ids in lookups if name in ids] == []
