"""Arenas: join/withdraw answers, pairing, scoring and the end, on the sandbox's clock."""

from __future__ import annotations

from collections.abc import Callable

import chess
import pytest

from sandbox.accounts import BOARD_PLAY, CHALLENGE_READ, TOURNAMENT_WRITE, Account
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import (
    JOIN_OR_RESUME_LIMIT,
    NO_SUCH_TOURNAMENT,
    ArenaPlayer,
    ArenaSpec,
    parse_arena,
)
from tests.sandbox.conftest import FIRST_MOVE_S
from tests.sandbox.spec import SpecClient

Client = Callable[[str | None], SpecClient]
HUMAN_SCOPES = (BOARD_PLAY, CHALLENGE_READ, TOURNAMENT_WRITE)


def online(sandbox: SandboxServer, *usernames: str) -> None:
    """Connect the players' event streams: the organiser pairs only players who are there."""
    for name in usernames:
        sandbox.lobby.hub.open_event_stream(name.lower())


def _sheet() -> ArenaPlayer:
    """A fresh sheet: the scoring never looks at the account, so any account will do."""
    return ArenaPlayer(account=Account("player", "token", bot=False, scopes=frozenset()),
                       rating=1500)


def test_arena_sheet_scores_wins_draws_fire_and_berserk() -> None:
    player = _sheet()
    results = [(1.0, False), (1.0, False), (1.0, False), (0.5, False), (0.0, False),
               (1.0, True), (0.5, False)]
    points = [player.record(result, berserk, plies=40) for result, berserk in results]
    # Two wins light the fire: the third win and the draw after it count double; a loss
    # puts it out; a berserk win adds one.
    assert points == [2, 2, 4, 2, 0, 3, 1]
    assert player.score == 14
    assert not player.fire
    # A draw in under 20 plies scores nothing; a berserk win under 14 plies no bonus.
    assert player.record(0.5, plies=19) == 0
    assert player.record(1.0, berserk=True, plies=13) == 2


def test_a_draw_after_a_draw_scores_only_in_a_long_game() -> None:
    """ArenaSheet.isDrawStreak (losses between the draws do not break the streak) and
    Pairing.longGame (60 plies in standard)."""
    player = _sheet()
    games = [(0.5, 40), (0.0, 40), (0.5, 40), (0.5, 60), (1.0, 40), (0.5, 59), (0.5, 59)]
    assert [player.record(result, plies=plies) for result, plies in games] == [
        1, 0, 0, 1, 2, 1, 0]


async def test_join_show_and_withdraw_before_the_start(sandbox: SandboxServer,
                                                       client: Client,
                                                       clock: ManualClock) -> None:
    bot = client(sandbox.add_account("bot1", bot=True))
    arena_id = sandbox.create_arena(ArenaSpec(name="Bot Arena", minutes=5, starts_in_s=60))
    assert (await bot.post(f"/api/tournament/{arena_id}/join")).json() == {"ok": True}
    shown = (await bot.get(f"/api/tournament/{arena_id}")).json()
    assert shown["fullName"] == "Bot Arena"
    assert shown["secondsToStart"] == 60
    assert shown["nbPlayers"] == 1
    assert shown["me"] == {"rank": 1, "withdraw": False}
    assert shown["verdicts"]["accepted"] is True
    assert shown["clock"] == {"limit": 60, "increment": 0}
    # Before the start a withdrawal leaves the list.
    assert (await bot.post(f"/api/tournament/{arena_id}/withdraw")).status == 200
    assert (await bot.get(f"/api/tournament/{arena_id}")).json()["nbPlayers"] == 0
    clock.advance(60)
    shown = (await client(None).get(f"/api/tournament/{arena_id}")).json()
    assert shown["isStarted"] is True and shown["secondsToFinish"] == 300
    assert "me" not in shown


async def test_join_refusals_have_lilas_messages(sandbox: SandboxServer,
                                                 client: Client) -> None:
    bot = client(sandbox.add_account("bot1", bot=True))
    no_bots = sandbox.create_arena(ArenaSpec(allow_bots=False, starts_in_s=60))
    reply = await bot.post(f"/api/tournament/{no_bots}/join")
    assert (reply.status, reply.json()) == (400, {"error": "Tournament restrictions"})
    verdicts = (await bot.get(f"/api/tournament/{no_bots}")).json()["verdicts"]
    assert verdicts == {"list": [{"condition": "Bot players are not allowed",
                                  "verdict": "Bot players are not allowed"}],
                        "accepted": False}
    private = sandbox.create_arena(ArenaSpec(password="secret", starts_in_s=60))
    reply = await bot.post(f"/api/tournament/{private}/join", data={"password": "nope"})
    assert (reply.status, reply.json()) == (400, {"error": "Wrong entry code"})
    assert (await bot.post(f"/api/tournament/{private}/join",
                           data={"password": "secret"})).status == 200
    battle = sandbox.create_arena(ArenaSpec(teams=frozenset({"red", "blue"}), starts_in_s=60))
    reply = await bot.post(f"/api/tournament/{battle}/join", data={"team": "red"})
    assert (reply.status, reply.json()) == (400, {"error": "Missing team"})
    sandbox.add_team_member("red", "bot1")
    assert (await bot.post(f"/api/tournament/{battle}/join",
                           data={"team": "red"})).status == 200
    reply = await bot.post("/api/tournament/nosuchid/join")
    assert (reply.status, reply.json()) == (400, {"error": "This tournament no longer exists"})
    reply = await bot.post("/api/tournament/nosuchid/withdraw")
    assert (reply.status, reply.json()) == (404, {"error": NO_SUCH_TOURNAMENT})


async def test_join_needs_a_scope_and_is_rate_limited(sandbox: SandboxServer,
                                                      client: Client) -> None:
    reader = client(sandbox.add_account("reader", bot=False, scopes=[CHALLENGE_READ]))
    arena_id = sandbox.create_arena(ArenaSpec(starts_in_s=60))
    reply = await reader.post(f"/api/tournament/{arena_id}/join")
    assert reply.status == 403
    human = client(sandbox.add_account("human", bot=False, scopes=HUMAN_SCOPES))
    for _ in range(JOIN_OR_RESUME_LIMIT):
        assert (await human.post(f"/api/tournament/{arena_id}/join")).status == 200
    reply = await human.post(f"/api/tournament/{arena_id}/join")
    assert reply.status == 429
    # Tournament.scala apiJoin: `rateLimited`, no `ratelimit` object.
    assert reply.json() == {"error": "Too many requests. Try again later."}


async def test_new_joins_cost_credits_by_the_arenas_maker(sandbox: SandboxServer,
                                                          client: Client,
                                                          clock: ManualClock) -> None:
    """TournamentApi.initialJoin: 8 credits an hour; an arena made by a user costs 2, one
    of lichess's 1; a rejoin costs nothing."""
    bot = client(sandbox.add_account("bot1", bot=True))
    by_users = [sandbox.create_arena(ArenaSpec(starts_in_s=600, minutes=120),
                                     created_by="someone")
                for _ in range(5)]
    for arena_id in by_users[:4]:
        assert (await bot.post(f"/api/tournament/{arena_id}/join")).status == 200
    reply = await bot.post(f"/api/tournament/{by_users[4]}/join")
    assert (reply.status, reply.json()) == (400, {
        "error": "You are joining too many tournaments"})
    assert (await bot.post(f"/api/tournament/{by_users[0]}/join")).status == 200  # a rejoin
    clock.advance(3600)
    assert (await bot.post(f"/api/tournament/{by_users[4]}/join")).status == 200
    by_lichess = [sandbox.create_arena(ArenaSpec(minutes=120)) for _ in range(6)]
    for arena_id in by_lichess:
        assert (await bot.post(f"/api/tournament/{arena_id}/join")).status == 200
    reply = await bot.post(f"/api/tournament/{sandbox.create_arena()}/join")
    assert reply.status == 400  # 2 + 6 credits spent this hour


async def test_a_withdrawal_from_the_top_7_is_paused(sandbox: SandboxServer, client: Client,
                                                     clock: ManualClock) -> None:
    """Pause.scala: 10 s the first time, then estimated game length / 15 x (pauses - 1)
    within 10 and 120 s; shown as me.pauseDelay; nobody below the top 7 is paused."""
    # People who are not on their event stream: nobody is paired, the ranks stay.
    names = [f"player{i}" for i in range(9)]
    tokens = {name: sandbox.add_account(name, bot=False, scopes=HUMAN_SCOPES)
              for name in names}
    arena_id = sandbox.create_arena(ArenaSpec(clock_limit_s=600, increment_s=30,
                                              minutes=60, starts_in_s=0))
    for name in names:
        sandbox.arenas.join(sandbox.account(name), arena_id)
    clock.advance(0)
    arena = sandbox.arena(arena_id)
    top, last = arena.standing()[0].account.id, arena.standing()[-1].account.id
    leader = client(tokens[top])
    assert (await leader.post(f"/api/tournament/{arena_id}/withdraw")).status == 200
    reply = await leader.post(f"/api/tournament/{arena_id}/join")
    assert (reply.status, reply.json()) == (400, {"error": "Your pause is not over yet"})
    assert (await leader.get(f"/api/tournament/{arena_id}")).json()["me"]["pauseDelay"] == 10
    clock.advance(9)
    assert (await leader.post(f"/api/tournament/{arena_id}/join")).status == 200
    # The second pause: (600 + 40 x 30) / 15 x 1 = 120 s.
    assert (await leader.post(f"/api/tournament/{arena_id}/withdraw")).status == 200
    shown = (await leader.get(f"/api/tournament/{arena_id}")).json()["me"]
    assert shown["pauseDelay"] == 120 and shown["withdraw"] is True
    trailer = client(tokens[last])
    assert (await trailer.post(f"/api/tournament/{arena_id}/withdraw")).status == 200
    assert (await trailer.post(f"/api/tournament/{arena_id}/join")).status == 200


async def test_a_pause_blocks_joins_to_running_arenas_only(
        sandbox: SandboxServer, client: Client, clock: ManualClock) -> None:
    """Pause.scala `canJoin`: `tour.isCreated || remainingDelay(...).isEmpty`."""
    names = [f"player{i}" for i in range(3)]
    tokens = {name: sandbox.add_account(name, bot=False, scopes=HUMAN_SCOPES)
              for name in names}
    running = sandbox.create_arena(ArenaSpec(minutes=60, starts_in_s=0))
    other_running = sandbox.create_arena(ArenaSpec(minutes=60, starts_in_s=0))
    later = sandbox.create_arena(ArenaSpec(minutes=60, starts_in_s=600))
    for name in names:
        sandbox.arenas.join(sandbox.account(name), running)
    clock.advance(0)
    leader = client(tokens[sandbox.arena(running).standing()[0].account.id])
    assert (await leader.post(f"/api/tournament/{running}/withdraw")).status == 200
    paused = await leader.post(f"/api/tournament/{other_running}/join")
    assert (paused.status, paused.json()) == (400, {"error": "Your pause is not over yet"})
    assert (await leader.post(f"/api/tournament/{later}/join")).status == 200
    assert sandbox.arena(later).status == "created"


async def test_a_playban_refuses_joins_and_withdraws(sandbox: SandboxServer, client: Client,
                                                     clock: ManualClock) -> None:
    token = sandbox.add_account("bot1", bot=True)
    bot = client(token)
    arena_id = sandbox.create_arena(ArenaSpec(starts_in_s=0, minutes=60))
    assert (await bot.post(f"/api/tournament/{arena_id}/join")).status == 200
    sandbox.arenas.playban(sandbox.account("bot1"), 5)
    assert sandbox.arena(arena_id).players["bot1"].withdrawn
    reply = await bot.post(f"/api/tournament/{arena_id}/join")
    assert reply.status == 403
    assert reply.json() == {"error": "Banned from playing for 5 minutes. Reason: Too many "
                            "aborts, unplayed games, or rage quits.", "minutes": 5}
    clock.advance(90)
    assert (await bot.post(f"/api/tournament/{arena_id}/join")).json()["minutes"] == 3
    clock.advance(210)
    assert (await bot.post(f"/api/tournament/{arena_id}/join")).status == 200


async def test_pairs_waiting_players_scores_results_and_ends_on_time(
        sandbox: SandboxServer, clock: ManualClock) -> None:
    for name in ("bot1", "bot2"):
        sandbox.add_account(name, bot=True)
    for name in ("alice", "bob"):
        sandbox.add_account(name, bot=False, scopes=HUMAN_SCOPES)
    arena_id = sandbox.create_arena(ArenaSpec(minutes=5, starts_in_s=10))
    arenas = sandbox.arenas
    for name in ("bot1", "bot2", "alice", "bob"):
        arenas.join(sandbox.account(name), arena_id)
    online(sandbox, "bot1", "bot2", "alice")  # bob is not there: not paired
    clock.advance(10)
    arena = sandbox.arena(arena_id)
    assert len(arena.games) == 1
    first = sandbox.game(arena.games[0])
    assert first.source == "arena" and first.tournament_id == arena_id
    # Mandatory (Game.isMandatory), with no challenge rules: no abort, draws offered freely.
    assert first.rules == frozenset() and first.mandatory and not first.abortable
    assert first.drawable  # Game.drawable: playable && !abortable, from the first ply
    white = first.players[chess.WHITE].username
    sandbox.end_game(first.id, "resign", "white")
    online(sandbox, "bob")
    clock.advance(14)  # an arena under 50 players is paired every 15 s
    assert len(arena.games) == 1
    clock.advance(1)
    assert len(arena.games) == 3
    scores = {p.account.username: p.score for p in arena.players.values()}
    assert scores[white] == 2 and sum(scores.values()) == 2
    # Nobody meets their last opponent again while someone else waits.
    for game_id in arena.games[1:]:
        names = {p.username for p in sandbox.game(game_id).players.values()}
        assert names != {first.players[chess.WHITE].username,
                         first.players[chess.BLACK].username}
    for game_id in arena.games[1:]:
        sandbox.end_game(game_id, "draw", None)
    arenas.withdraw(sandbox.account("bob"), arena_id)
    clock.advance(15)
    assert arena.players["bob"].withdrawn
    assert all("bob" not in {p.id for p in sandbox.game(g).players.values()}
               for g in arena.games[3:])
    running = arena.games[-1]
    clock.advance(300)
    assert arena.status == "finished"
    before = {p.account.id: p.score for p in arena.players.values()}
    sandbox.end_game(running, "resign", "black")
    assert {p.account.id: p.score for p in arena.players.values()} == before
    shown = arenas.json(arena, sandbox.account("bot1"))
    assert shown["isFinished"] is True
    assert shown["me"]["rank"] == arena.rank_of("bot1")


async def test_bots_at_their_daily_cap_are_still_paired(clock: ManualClock) -> None:
    """BotLimit is read on challenges only: arena pairing pays it no heed."""
    from sandbox.ratelimit import RateLimits
    server = SandboxServer(clock=clock, limits=RateLimits(bot_games_per_day=1))
    await server.start()
    try:
        for name in ("bot1", "bot2", "bot3"):
            server.add_account(name, bot=True)
        arena_id = server.create_arena(ArenaSpec(starts_in_s=0))
        for name in ("bot1", "bot2", "bot3"):
            server.arenas.join(server.account(name), arena_id)
        clock.advance(0.5)
        arena = server.arena(arena_id)
        assert len(arena.games) == 1
        server.end_game(arena.games[0], "draw", None)
        clock.advance(15)
        # bot1 and bot2 used their one bot game of the day, and play on (bots are paired
        # whether or not their event stream is open).
        assert len(arena.games) == 2
        assert server.lobby.limiters.bot_games.wait_s("bot1") > 0
    finally:
        await server.stop()


async def test_bots_cannot_berserk(sandbox: SandboxServer) -> None:
    from sandbox.errors import ApiError
    sandbox.add_account("bot1", bot=True)
    sandbox.add_account("alice", bot=False, scopes=HUMAN_SCOPES)
    arena_id = sandbox.create_arena(ArenaSpec(starts_in_s=0))
    for name in ("bot1", "alice"):
        sandbox.arenas.join(sandbox.account(name), arena_id)
    online(sandbox, "bot1", "alice")
    sandbox.arenas.pair(sandbox.arena(arena_id))
    game_id = sandbox.arena(arena_id).games[0]
    with pytest.raises(ApiError, match="Bots cannot berserk"):
        sandbox.arenas.berserk(sandbox.account("bot1"), game_id)
    sandbox.arenas.berserk(sandbox.account("alice"), game_id)


def test_the_command_lines_arena() -> None:
    spec = parse_arena("3+2/20/60:nobots")
    assert (spec.clock_limit_s, spec.increment_s, spec.minutes, spec.starts_in_s,
            spec.allow_bots) == (180, 2, 20, 60.0, False)
    assert parse_arena("0.5+0/5") == ArenaSpec(clock_limit_s=30, increment_s=0, minutes=5)
    for bad in ("3+2", "3+2/0", "x/5", "1+0/5:bots", "1+0/5/-1"):
        with pytest.raises(ValueError, match="expected MIN\\+INC/MINUTES"):
            parse_arena(bad)


async def test_no_pairings_in_the_last_seconds(sandbox: SandboxServer,
                                               clock: ManualClock) -> None:
    """Tournament.pairingsClosed: max(30, min(limit / 2, 120)) s before the end."""
    for name in ("bot1", "bot2"):
        sandbox.add_account(name, bot=True)
    arena_id = sandbox.create_arena(ArenaSpec(clock_limit_s=60, minutes=1, starts_in_s=0))
    clock.advance(31)  # 29 s left: closed for a 1+0 arena
    arena = sandbox.arena(arena_id)
    for name in ("bot1", "bot2"):
        sandbox.arenas.join(sandbox.account(name), arena_id, pair_me_asap=True)
    online(sandbox, "bot1", "bot2")
    clock.advance(2)
    assert arena.games == []
    assert sandbox.arenas.json(arena, None)["pairingsClosed"] is True


async def test_a_player_who_does_not_start_is_withdrawn(sandbox: SandboxServer,
                                                        clock: ManualClock) -> None:
    for name in ("bot1", "bot2"):
        sandbox.add_account(name, bot=True)
    arena_id = sandbox.create_arena(ArenaSpec(starts_in_s=0))
    for name in ("bot1", "bot2"):
        sandbox.arenas.join(sandbox.account(name), arena_id)
    online(sandbox, "bot1", "bot2")
    clock.advance(0)
    arena = sandbox.arena(arena_id)
    game = sandbox.game(arena.games[0])
    white = game.players[chess.WHITE].id
    clock.advance(FIRST_MOVE_S + 0.1)  # white never moves: noStart, white loses
    assert game.status == "noStart"
    assert arena.players[white].withdrawn
    assert not arena.players[game.players[chess.BLACK].id].withdrawn
    assert sandbox.arenas.json(arena, None)["botsAllowed"] is True
    no_bots = sandbox.arena(sandbox.create_arena(ArenaSpec(allow_bots=False)))
    assert "botsAllowed" not in sandbox.arenas.json(no_bots, None)


async def test_a_finished_arena_is_not_joined(sandbox: SandboxServer, client: Client,
                                              clock: ManualClock) -> None:
    bot = client(sandbox.add_account("bot1", bot=True))
    arena_id = sandbox.create_arena(ArenaSpec(minutes=1))
    clock.advance(61)
    reply = await bot.post(f"/api/tournament/{arena_id}/join")
    assert (reply.status, reply.json()) == (400, {"error": "This tournament no longer exists"})


async def test_pairing_cadence_follows_the_arenas_size(sandbox: SandboxServer,
                                                       clock: ManualClock) -> None:
    """StartedOrganizer: under 50 players every 15 s, from 50 every 2 s."""
    for size, paired_again_after_s in ((4, 15), (50, 2)):
        names = [f"b{size}x{i}" for i in range(size)]
        for name in names:
            sandbox.add_account(name, bot=True)
        arena_id = sandbox.create_arena(ArenaSpec(minutes=60, starts_in_s=0))
        for name in names:
            sandbox.arenas.join(sandbox.account(name), arena_id)
        clock.advance(0)
        arena = sandbox.arena(arena_id)
        assert len(arena.games) == size // 2  # paired at the start
        for game_id in arena.games:
            sandbox.end_game(game_id, "draw", None)
        clock.advance(paired_again_after_s - 1)
        assert len(arena.games) == size // 2, size
        clock.advance(1)
        assert len(arena.games) == size, size
        for game_id in arena.games:
            sandbox.end_game(game_id, "draw", None)


async def test_a_team_battle_shows_the_teams_one_may_join_with(sandbox: SandboxServer) -> None:
    """JsonView.scala `teamBattle.joinWith`: the battle's teams the signed-in player is in;
    and a player on the list sees the conditions as accepted."""
    sandbox.add_account("bot1", bot=True)
    sandbox.add_team_member("fans", "bot1")
    battle = sandbox.arena(sandbox.create_arena(ArenaSpec(teams=frozenset({"fans", "club"}),
                                                          starts_in_s=60)))
    me = sandbox.account("bot1")
    assert sandbox.arenas.json(battle, me)["teamBattle"]["joinWith"] == ["fans"]
    assert "joinWith" not in sandbox.arenas.json(battle, None)["teamBattle"]
    assert "teamBattle" not in sandbox.arenas.json(
        sandbox.arena(sandbox.create_arena(ArenaSpec())), me)
