"""Arena tournaments as lila runs them: joining, pairing waiting players, scoring, the end.

Where each rule comes from (github lichess-org/lila):
    join / withdraw / show      app/controllers/Tournament.scala (apiJoin, apiWithdraw, show)
    join results and messages   modules/tournament/src/main/Tournament.scala (JoinResult);
                                a finished arena is not `enterable` (TournamentApi `join`
                                runs on cached.tourCache.enterable): JoinResult's Zero,
                                NotFound
    join rate limits            app/controllers/Tournament.scala apiJoin: NoPlayban (403),
                                then limit.tourJoinOrResume (30 a user per 10 minutes, key
                                tournament.user.joinOrResume, a 429 with no `ratelimit`
                                object); TournamentApi.scala
                                `initialJoin` (key tournament.user.join: 8 credits an hour
                                and 30 a day, a join to an arena one is not on yet costs 1
                                for an arena by lichess, 2 for one made by a user, answered
                                400 "You are joining too many tournaments")
    pause                       Pause.scala, TournamentApi.scala `withdraw`: a player in
                                the top 7 who withdraws from a running arena is paused
                                (sandbox/arena_pause.py), a join meanwhile to an arena that
                                has started is refused (Pause.canJoin)
    playban                     sandbox/playban.py: a join is answered 403; a ban
                                withdraws the player from its arenas (pausePlaybanned)
    bots allowed or not         modules/gathering/src/main/Condition.scala (Bots: "Bot
                                players are not allowed"); TournamentApi.scala `join`
                                answers a refused verdict with JoinResult.Verdicts
    pairing each tick           modules/tournament/src/main/StartedOrganizer.scala (an
                                arena under 50 players is paired every 15 s, one of 50 to
                                999 every 2 s, a bigger one every second; a person waits
                                while on the arena's page, a bot whenever it is on the
                                list and not withdrawn:
                                fetchWaitingBots reads PlayerRepo.activeBotIds with no
                                online check, so a bot that is down is paired and loses by
                                noStart), WaitingUsers.scala,
                                arena/PairingSystem.scala (neighbours by rank, no
                                immediate rematch, colours by history)
    scoring                     arena/ArenaSheet.scala, Pairing.scala (win 2, draw 1, loss
                                0; after two wins in a row a player is on fire and scores
                                double until a game that is not a win; a draw in under 20
                                plies scores nothing; a berserk win of 14 plies or more +1)
    pairings closed             Tournament.scala `pairingsClosed`: no new pairing in the last
                                max(30, min(limit / 2, 120)) seconds
    berserk                     modules/tournament/src/main/TournamentApi.scala (berserk:
                                never for a BOT)
    first move                  modules/core game/Game.scala (timeForFirstMove: the arena's
                                shorter allowance, a missed first move loses: noStart)
    no abort                    modules/core game/Game.scala (abortable needs nonMandatory;
                                a tournament game is mandatory: Game.mandatory here, with
                                no challenge rule on the game)
    draws                       no noEarlyDraw rule in an arena (GameExt
                                playerCanOfferDraw refuses early offers only under that
                                rule and in Swiss); the score is what keeps early draws
                                down: under 20 plies nothing (Pairing.quickDraw), and a
                                draw in a draw streak nothing unless the game was long
                                (arena/ArenaSheet.scala isDrawStreak, Pairing.longGame)
    no start                    a player who loses by noStart is withdrawn from the arena
                                (TournamentApi.scala, on the pairing's end; BotLi drops
                                the arena then)
    the end                     TournamentApi.scala `finish`: games still running when the
                                time is up go on but are not scored
    the daily bot-game cap      modules/bot/src/main/BotLimit.scala: an arena's bot-vs-bot
                                game counts towards it (every all-bot StartGame), but the
                                cap is only read when a challenge is made or accepted
                                (challengeLimitError): arena pairing never consults it
"""

from __future__ import annotations

import logging
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import chess

from sandbox.accounts import Account
from sandbox.arena_pause import TOP_PAUSED, Pauses, estimate_total_s
from sandbox.errors import ApiError, RateLimited
from sandbox.games import Game
from sandbox.lobby import Lobby
from sandbox.playban import Playbans, playban_error
from sandbox.ratelimit import DAY_S, GENERIC_LIMIT, LilaRateLimit, consume_all
from sandbox.timecontrol import TimeControl, perf_key
from sandbox.timers import SandboxClock, Timer

log = logging.getLogger(__name__)

ARENA_ID_LENGTH = 8
# StartedOrganizer.scala: the organiser runs every second; each run pairs the arenas of
# 1000 players or more, every second run those of 50 or more, every 15th run all of them.
PAIRING_TICK_S = 1.0
ALL_ARENAS_EVERY_RUNS = 15
DECENT_ARENAS_EVERY_RUNS = 2
DECENT_ARENA_PLAYERS = 50
MASSIVE_ARENA_PLAYERS = 1000
# limit.tourJoinOrResume (app/controllers/Tournament.scala, lila's Limiters): any join.
JOIN_OR_RESUME_LIMIT = 30
JOIN_OR_RESUME_WINDOW_S = 600.0
# TournamentApi.initialJoin: a join to an arena one is not on yet, in credits.
INITIAL_JOIN_KEY = "tournament.user.join"
INITIAL_JOIN_PER_HOUR = 8
INITIAL_JOIN_PER_DAY = 30
HOUR_S = 3600.0
INITIAL_JOIN_COST_BY_LICHESS = 1
INITIAL_JOIN_COST_BY_USER = 2
LICHESS = "lichess"  # the creator of lichess's own (scheduled) arenas
# arena/Sheet.scala
WIN_POINTS = 2
DRAW_POINTS = 1
LOSS_POINTS = 0
BERSERK_WIN_BONUS = 1
FIRE_AFTER_WINS = 2
QUICK_DRAW_PLIES = 20  # Pairing.quickDraw: a draw shorter than this scores nothing
BERSERK_MIN_PLIES = 14  # Pairing.notSoQuickFinish: a berserk bonus needs this many plies
# Tournament.pairingsClosed: max(30, min(clock limit / 2, 120)) seconds before the end.
PAIRINGS_CLOSE_MIN_S = 30
PAIRINGS_CLOSE_MAX_S = 120
STANDING_PAGE_SIZE = 10
# Pairing.longGame in standard: a draw after another draw scores only past this many plies.
LONG_GAME_PLIES = 60

# Tournament.scala JoinResult: lila's error texts.
WRONG_ENTRY_CODE = "Wrong entry code"
PAUSED = "Your pause is not over yet"
JOINING_TOO_MANY = "You are joining too many tournaments"
VERDICTS_REFUSED = "Tournament restrictions"
MISSING_TEAM = "Missing team"
NOT_FOUND = "This tournament no longer exists"
NOPE = "Couldn't join for some reason?"
NO_SUCH_TOURNAMENT = "No such tournament"
BOTS_ALLOWED = "Bot players are allowed"
BOTS_NOT_ALLOWED = "Bot players are not allowed"


@dataclass(frozen=True)
class ArenaSpec:
    """What an arena is made with (the creation form, reduced to what the sandbox plays)."""

    name: str = "Sandbox Arena"
    clock_limit_s: int = 60
    increment_s: int = 0
    minutes: int = 5
    starts_in_s: float = 0.0
    allow_bots: bool = True
    rated: bool = False
    password: str | None = None
    # A team battle: the teams that may play; a player names one when joining.
    teams: frozenset[str] = frozenset()
    berserkable: bool = True


ARENA_FORMAT = "MIN+INC/MINUTES[/START_IN_S][:nobots]"


def parse_arena(text: str) -> ArenaSpec:
    """The command line's arena, e.g. "1+0/5" (1+0, five minutes, starting at once),
    "3+2/20/60:nobots" (starting in a minute, bots refused)."""
    body, _, flag = text.partition(":")
    parts = body.split("/")
    try:
        if flag not in ("", "nobots") or len(parts) not in (2, 3):
            raise ValueError
        minutes_text, sep, increment_text = parts[0].partition("+")
        limit_s = round(float(minutes_text) * 60)
        increment_s = int(increment_text) if sep else 0
        duration_min = int(parts[1])
        starts_in_s = float(parts[2]) if len(parts) == 3 else 0.0
        if limit_s < 0 or increment_s < 0 or duration_min <= 0 or starts_in_s < 0:
            raise ValueError
    except ValueError:
        raise ValueError(f"arena {text!r}: expected {ARENA_FORMAT}, e.g. 1+0/5 or "
                         "3+2/20/60:nobots") from None
    return ArenaSpec(clock_limit_s=limit_s, increment_s=increment_s, minutes=duration_min,
                     starts_in_s=starts_in_s, allow_bots=flag != "nobots")


@dataclass
class ArenaPlayer:
    """One player's sheet: results in order, score, and whether they are paired now."""

    account: Account
    rating: int
    team: str | None = None
    points: list[int] = field(default_factory=list)
    fire: bool = False
    wins_in_row: int = 0
    # Results, most recent last: "win", "draw" (scored or not), "loss".
    results: list[str] = field(default_factory=list)
    withdrawn: bool = False
    game_id: str | None = None
    last_opponent: str | None = None
    whites: int = 0
    blacks: int = 0
    api_waiting: bool = False  # joined with pairMeAsap: waiting without the event stream

    @property
    def score(self) -> int:
        return sum(self.points)

    def in_draw_streak(self) -> bool:
        """ArenaSheet.isDrawStreak: the last result that is not a loss is a draw."""
        for result in reversed(self.results):
            if result != "loss":
                return result == "draw"
        return False

    def record(self, result: float, berserk: bool = False, plies: int = QUICK_DRAW_PLIES) -> int:
        """Score one finished game (1 win, 0.5 draw, 0 loss) of `plies` plies as
        arena/ArenaSheet.scala does (a standard arena: Pairing.longGame is 60 plies)."""
        multiplier = 2 if self.fire else 1
        if result == 1.0:
            bonus = BERSERK_WIN_BONUS if berserk and plies >= BERSERK_MIN_PLIES else 0
            points = WIN_POINTS * multiplier + bonus
            self.wins_in_row += 1
        elif result == 0.5 and plies < QUICK_DRAW_PLIES:
            points = 0
            self.wins_in_row = 0
        elif result == 0.5:
            streak_void = not self.fire and plies < LONG_GAME_PLIES and self.in_draw_streak()
            points = 0 if streak_void else DRAW_POINTS * multiplier
            self.wins_in_row = 0
        else:
            points = LOSS_POINTS
            self.wins_in_row = 0
        self.results.append("win" if result == 1.0 else "draw" if result == 0.5 else "loss")
        self.fire = self.wins_in_row >= FIRE_AFTER_WINS
        self.points.append(points)
        return points


@dataclass
class Arena:
    """One arena: created, started, then finished on time."""

    id: str
    spec: ArenaSpec
    created_by: str
    starts_at_s: float
    starts_at_utc: datetime
    players: dict[str, ArenaPlayer] = field(default_factory=dict)
    games: list[str] = field(default_factory=list)
    berserks: set[tuple[str, str]] = field(default_factory=set)  # (game id, user id)
    status: str = "created"  # created, started, finished
    organizer_runs: int = 0  # StartedOrganizer runs since the start

    @property
    def ends_at_s(self) -> float:
        return self.starts_at_s + self.spec.minutes * 60

    @property
    def pairings_close_s(self) -> float:
        """Seconds before the end after which nobody is paired (Tournament.pairingsClosed)."""
        return max(PAIRINGS_CLOSE_MIN_S, min(self.spec.clock_limit_s / 2,
                                             PAIRINGS_CLOSE_MAX_S))

    @property
    def time_control(self) -> TimeControl:
        return TimeControl(limit_s=self.spec.clock_limit_s, increment_s=self.spec.increment_s)

    def standing(self) -> list[ArenaPlayer]:
        """Rank order: score, then rating (lila breaks ties by performance)."""
        return sorted(self.players.values(), key=lambda p: (-p.score, -p.rating,
                                                            p.account.id))

    def rank_of(self, user_id: str) -> int | None:
        for rank, player in enumerate(self.standing(), 1):
            if player.account.id == user_id:
                return rank
        return None


class Arenas:
    """Every arena of one sandbox, on the lobby's clock and games."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        self.arenas: dict[str, Arena] = {}
        self.team_members: dict[str, set[str]] = {}
        clock = lobby.settings.game.clock
        # lila's RateLimit opens a window at the first charge (sandbox.ratelimit).
        self._join_or_resume = LilaRateLimit(JOIN_OR_RESUME_LIMIT, JOIN_OR_RESUME_WINDOW_S,
                                             clock.now)
        self._initial_join = (LilaRateLimit(INITIAL_JOIN_PER_HOUR, HOUR_S, clock.now),
                              LilaRateLimit(INITIAL_JOIN_PER_DAY, DAY_S, clock.now))
        self.pauses = Pauses(clock.now)
        self.playbans = Playbans(clock.now)
        self._timers: list[Timer] = []
        self.pairing_hooks: list[Callable[[Arena, Game], None]] = []
        lobby.finish_listeners.append(self._game_finished)

    @property
    def _clock(self) -> SandboxClock:
        return self.lobby.settings.game.clock

    # --- creation and lifecycle ----------------------------------------------------------

    def create(self, spec: ArenaSpec, created_by: str = "lichess") -> Arena:
        if spec.minutes <= 0 or spec.clock_limit_s < 0 or spec.increment_s < 0:
            raise ValueError("an arena needs minutes > 0 and a clock of limit >= 0, "
                             "increment >= 0")
        if spec.starts_in_s < 0:
            raise ValueError("starts_in_s must be >= 0")
        arena_id = "".join(secrets.choice(string.ascii_letters + string.digits)
                           for _ in range(ARENA_ID_LENGTH))
        now_s = self._clock.now()
        arena = Arena(id=arena_id, spec=spec, created_by=created_by,
                      starts_at_s=now_s + spec.starts_in_s,
                      starts_at_utc=datetime.now(UTC) + timedelta(seconds=spec.starts_in_s))
        self.arenas[arena_id] = arena
        self._timers.append(self._clock.call_later(spec.starts_in_s,
                                                   lambda: self._start(arena)))
        log.info("arena %s %r created: %s+%s, %d minutes, starts in %.0f s, bots %s",
                 arena_id, spec.name, spec.clock_limit_s, spec.increment_s, spec.minutes,
                 spec.starts_in_s, "allowed" if spec.allow_bots else "refused")
        return arena

    def _start(self, arena: Arena) -> None:
        arena.status = "started"
        log.info("arena %s started with %d players", arena.id, len(arena.players))
        self._timers.append(self._clock.call_later(arena.spec.minutes * 60,
                                                   lambda: self._finish(arena)))
        self._tick(arena)

    def _tick(self, arena: Arena) -> None:
        if arena.status != "started":
            return
        runs = arena.organizer_runs
        arena.organizer_runs += 1
        players = len(arena.players)
        if runs % ALL_ARENAS_EVERY_RUNS == 0 or players >= MASSIVE_ARENA_PLAYERS or (
                runs % DECENT_ARENAS_EVERY_RUNS == 0 and players >= DECENT_ARENA_PLAYERS):
            self.pair(arena)
        self._timers.append(self._clock.call_later(PAIRING_TICK_S, lambda: self._tick(arena)))

    def _finish(self, arena: Arena) -> None:
        arena.status = "finished"
        for player in arena.players.values():
            player.game_id = None  # games still running go on, unscored
        ranked = ", ".join(f"{p.account.username} {p.score}" for p in arena.standing())
        log.info("arena %s finished: %s", arena.id, ranked or "no players")

    def shutdown(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    def find(self, arena_id: str) -> Arena:
        arena = self.arenas.get(arena_id)
        if arena is None:
            raise ApiError(404, NO_SUCH_TOURNAMENT)
        return arena

    # --- join and withdraw ---------------------------------------------------------------

    def verdicts(self, arena: Arena, account: Account | None) -> dict[str, Any]:
        """Condition.scala verdicts, as `GET /api/tournament/{id}` shows them."""
        condition = BOTS_ALLOWED if arena.spec.allow_bots else BOTS_NOT_ALLOWED
        # JsonView.scala: a player on the list and not withdrawn is shown the conditions
        # as accepted.
        player = arena.players.get(account.id) if account is not None else None
        on_list = player is not None and not player.withdrawn
        refused = account is not None and account.bot and not arena.spec.allow_bots \
            and not on_list
        return {"list": [{"condition": condition,
                          "verdict": condition if refused else "ok"}],
                "accepted": not refused}

    def join(self, account: Account, arena_id: str, *, password: str | None = None,
             team: str | None = None, pair_me_asap: bool = False) -> None:
        """Tournament.scala apiJoin: a playban is 403, too many joins or resumes 429, the
        other errors 400 `{"error": <JoinResult text>}`, in TournamentApi.join's order."""
        banned_min = self.playbans.remaining_minutes(account.id)
        if banned_min is not None:
            raise playban_error(banned_min)
        wait_s = self._join_or_resume.consume(account.id)
        if wait_s:
            # Tournament.scala apiJoin: `limit.tourJoinOrResume(me, rateLimited)`, a bare
            # {"error": ...} 429 (app/http/ResponseBuilder.scala), no `ratelimit` object.
            raise RateLimited(GENERIC_LIMIT, None, wait_s)
        arena = self.arenas.get(arena_id)
        if arena is None or arena.status == "finished":
            raise ApiError(400, NOT_FOUND)
        previous = arena.players.get(account.id)
        if previous is None and not self._charge_initial_join(account, arena):
            raise ApiError(400, JOINING_TOO_MANY)
        if previous is None and arena.spec.password is not None \
                and password != arena.spec.password:
            raise ApiError(400, WRONG_ENTRY_CODE)
        if not self.verdicts(arena, account)["accepted"]:
            raise ApiError(400, VERDICTS_REFUSED)
        # Pause.scala `canJoin`: `tour.isCreated || remainingDelay(...).isEmpty`: a pause
        # never blocks a join to an arena that has not started.
        if arena.status != "created" \
                and self.pauses.remaining_s(account.id, self._estimate_s(arena)) is not None:
            raise ApiError(400, PAUSED)
        if arena.spec.teams and (team not in arena.spec.teams
                                 or account.id not in self.team_members.get(team, set())):
            raise ApiError(400, MISSING_TEAM)
        player = arena.players.get(account.id)
        if player is None:
            arena.players[account.id] = ArenaPlayer(
                account, account.rating(perf_key("standard", arena.time_control)), team)
            log.info("arena %s: %s joined", arena.id, account.username)
        else:
            player.withdrawn = False
        if pair_me_asap:
            # TournamentApi.join: waitingUsers.addApiUser, waiting for the organiser's
            # next run even off the event stream; nobody is paired at once.
            arena.players[account.id].api_waiting = True

    def _charge_initial_join(self, account: Account, arena: Arena) -> bool:
        """TournamentApi.initialJoin, a composite limit: every window must have room."""
        cost = (INITIAL_JOIN_COST_BY_LICHESS if arena.created_by == LICHESS
                else INITIAL_JOIN_COST_BY_USER)
        # memo RateLimit.composite: the hour is charged first and keeps its charge when the
        # day refuses.
        if consume_all(self._initial_join, account.id, cost):
            log.info("arena %s: %s joins too many tournaments (%s)", arena.id,
                     account.username, INITIAL_JOIN_KEY)
            return False
        return True

    def initial_join_credits(self, user_id: str) -> int:
        """Credits of `tournament.user.join` spent in the current hour's window."""
        return self._initial_join[0].count(user_id)

    def join_requests(self, user_id: str) -> int:
        """Joins and resumes counted by `tournament.user.joinOrResume` in its window."""
        return self._join_or_resume.count(user_id)

    @staticmethod
    def _estimate_s(arena: Arena) -> int:
        return estimate_total_s(arena.spec.clock_limit_s, arena.spec.increment_s)

    def withdraw(self, account: Account, arena_id: str, *, pause: bool = True) -> None:
        """Tournament.scala apiWithdraw (selfPause): before the start the player leaves the
        list; once it runs they stay in the standings but are paired no more, and one in
        the top 7 is paused (TournamentApi.withdraw)."""
        arena = self.find(arena_id)
        player = arena.players.get(account.id)
        if player is None:
            return
        if arena.status == "created":
            del arena.players[account.id]
        elif arena.status == "started":
            rank = arena.rank_of(account.id)
            player.withdrawn = True
            if pause and rank is not None and rank <= TOP_PAUSED:
                self.pauses.add(account.id)
                log.info("arena %s: %s paused (rank %d)", arena.id, account.username, rank)
        log.info("arena %s: %s withdrew", arena.id, account.username)

    def playban(self, account: Account, minutes: float) -> None:
        """A playban of `minutes` (PlaybanApi): joins are refused meanwhile, and the player
        is withdrawn from every arena it is in, with no pause (pausePlaybanned)."""
        self.playbans.ban(account.id, minutes)
        for arena in self.arenas.values():
            player = arena.players.get(account.id)
            if player is not None and arena.status != "finished":
                player.withdrawn = True
        log.info("%s is banned from playing for %s minutes", account.username, minutes)

    def berserk(self, account: Account, game_id: str) -> None:
        """TournamentApi.scala berserk: never a BOT; only before one's first move."""
        if account.bot:
            raise ApiError(400, "Bots cannot berserk")
        game = self.lobby.find_game(game_id)
        arena = self.arenas.get(game.tournament_id or "")
        color = game.color_of(account)
        if arena is None or color is None or not arena.spec.berserkable \
                or game.has_moved(color):
            raise ApiError(400, "Cannot berserk")
        arena.berserks.add((game.id, account.id))

    # --- pairing -------------------------------------------------------------------------

    def _waiting(self, arena: Arena) -> list[ArenaPlayer]:
        """WaitingUsers: a person while online; a bot whenever it is active on the list
        (StartedOrganizer fetchWaitingBots: no online check)."""
        online = self.lobby.hub.online()
        return [p for p in arena.standing()
                if not p.withdrawn and p.game_id is None
                and (p.account.bot or p.api_waiting or p.account.id in online)]

    def pair(self, arena: Arena) -> list[Game]:
        """arena/PairingSystem.scala, reduced: waiting players in rank order, each with the
        nearest one that is not their last opponent (unless nobody else waits). The daily
        bot-game cap plays no part (BotLimit checks it on challenges only)."""
        if arena.ends_at_s - self._clock.now() < arena.pairings_close_s:
            return []
        waiting = self._waiting(arena)
        games: list[Game] = []
        while len(waiting) >= 2:
            first = waiting.pop(0)
            fresh = [p for p in waiting if p.account.id != first.last_opponent]
            chosen = (fresh or waiting)[0]
            waiting.remove(chosen)
            games.append(self._start_game(arena, first, chosen))
        return games

    def _start_game(self, arena: Arena, a: ArenaPlayer, b: ArenaPlayer) -> Game:
        white, black = (a, b) if (a.whites - a.blacks) <= (b.whites - b.blacks) else (b, a)
        game = self.lobby.start_game(white.account, black.account, arena.time_control,
                                     "standard", None, arena.spec.rated, source="arena",
                                     tournament_id=arena.id)
        white.whites += 1
        black.blacks += 1
        for player, other in ((white, black), (black, white)):
            player.game_id = game.id
            player.last_opponent = other.account.id
        arena.games.append(game.id)
        for hook in self.pairing_hooks:
            hook(arena, game)
        return game

    def _game_finished(self, game: Game) -> None:
        arena = self.arenas.get(game.tournament_id or "")
        if arena is None or arena.status != "started":
            return
        for color in (chess.WHITE, chess.BLACK):
            player = arena.players.get(game.players[color].id)
            if player is None or player.game_id != game.id:
                continue
            player.game_id = None
            if game.status == "aborted":
                continue
            if game.status == "noStart" and game.winner != color:
                player.withdrawn = True
            result = 0.5 if game.winner is None else float(game.winner == color)
            player.record(result, berserk=(game.id, player.account.id) in arena.berserks,
                          plies=game.plies)

    # --- JSON ----------------------------------------------------------------------------

    def json(self, arena: Arena, me: Account | None, page: int = 1) -> dict[str, Any]:
        """app/controllers/Tournament.scala `show` (JsonView.scala), the parts a client
        reads: status, timing, clock, standing page, verdicts and `me`."""
        now_s = self._clock.now()
        standing = arena.standing()
        first = (page - 1) * STANDING_PAGE_SIZE
        body: dict[str, Any] = {
            "id": arena.id,
            "createdBy": arena.created_by,
            "startsAt": arena.starts_at_utc.isoformat(timespec="milliseconds")
                        .replace("+00:00", "Z"),
            "system": "arena",
            "fullName": arena.spec.name,
            "minutes": arena.spec.minutes,
            "clock": {"limit": arena.spec.clock_limit_s, "increment": arena.spec.increment_s},
            "variant": "standard",
            "rated": arena.spec.rated,
            "berserkable": arena.spec.berserkable,
            # lila JsonView.scala writes botsAllowed only when it is true.
            **({"botsAllowed": True} if arena.spec.allow_bots else {}),
            "nbPlayers": len(arena.players),
            "verdicts": self.verdicts(arena, me),
            "standing": {"page": page, "players": [
                {"name": p.account.username, "rank": first + i + 1, "rating": p.rating,
                 "score": p.score,
                 "sheet": {"scores": "".join(str(s) for s in reversed(p.points)),
                           **({"fire": True} if p.fire else {})},
                 **({"withdraw": True} if p.withdrawn else {})}
                for i, p in enumerate(standing[first:first + STANDING_PAGE_SIZE])]},
        }
        body["pairingsClosed"] = arena.status == "started" and (
            arena.ends_at_s - now_s < arena.pairings_close_s)
        if arena.status == "created":
            body["secondsToStart"] = max(int(arena.starts_at_s - now_s), 0)
        elif arena.status == "started":
            body["isStarted"] = True
            body["secondsToFinish"] = max(int(arena.ends_at_s - now_s), 0)
        else:
            body["isFinished"] = True
        if arena.spec.password is not None:
            body["private"] = True
        if arena.spec.teams:
            # JsonView.scala `teamBattle`: the teams, and for a signed-in player the ones of
            # them they are in (`joinWith`, TournamentApi.join accepts only those).
            battle: dict[str, Any] = {"teams": {t: [t, None] for t in sorted(arena.spec.teams)},
                                      "nbLeaders": 5}
            if me is not None:
                battle["joinWith"] = sorted(t for t in arena.spec.teams
                                            if me.id in self.team_members.get(t, set()))
            body["teamBattle"] = battle
        if me is not None and me.id in arena.players:
            player = arena.players[me.id]
            pause_s = self.pauses.remaining_s(me.id, self._estimate_s(arena))
            body["me"] = {"rank": arena.rank_of(me.id), "withdraw": player.withdrawn,
                          **({"gameId": player.game_id} if player.game_id else {}),
                          **({"pauseDelay": pause_s} if pause_s is not None else {})}
        return body
