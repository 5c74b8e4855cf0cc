"""The sandbox's state and rules across games: challenges, pairing, results, presence."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import chess

from sandbox.accounts import Account, AccountBook
from sandbox.challenges import Challenge, ChallengeRequest, decline_reason
from sandbox.errors import ApiError, RateLimited, not_found
from sandbox.farming import PREV_GAMES, SAME_PLIES, Crosstables, PairResult, opening_sans
from sandbox.games import ChatLine, Game, GameSettings, color_name
from sandbox.ratelimit import GENERIC_LIMIT, Limiters, RateLimits, consume_all
from sandbox.streams import Event, Hub, Subscriber
from sandbox.timecontrol import TimeControl, variant_board
from sandbox.timers import Timer
from sandbox.views import game_event_info_json, game_full_json, game_state_json

log = logging.getLogger(__name__)

# Elo K-factor for rated sandbox games.
ELO_K = 20
BOT_DAY_KEY = "bot.vsBot.day"


@dataclass(frozen=True)
class Quirks:
    """Odd but real lichess behaviours a client must survive, off unless asked for."""

    # On a move that ends the game, a `started` gameState first, then the final one
    # (lichess-bot#1067).
    split_final_state: bool = False
    # The last gameState still says `started`; only gameFinish tells the end (api#214).
    stale_final_state: bool = False
    # No final gameState at all before the game stream closes (api#60).
    omit_final_state: bool = False
    # gameFinish on the event stream before the final gameState on the game stream: the
    # two streams are separate connections, and nothing orders one against the other.
    finish_first: bool = False


QUIRK_NAMES = tuple(Quirks.__dataclass_fields__)


@dataclass
class LobbySettings:
    """Timing of the lobby; every value is configurable so tests can shorten it."""

    # lila's keep-alive cadence: an empty line every 6 s on the event stream (modules/api/src/
    # main/EventStream.scala) and every 7 s on a game stream (modules/bot/src/main/
    # GameStateStream.scala).
    keepalive_s: float = 6.0
    game_keepalive_s: float = 7.0
    challenge_expiry_s: float = 20.0  # real-time challenges without keepAliveStream
    # lila RoundAsyncActor.scala `showMillisToGone`: a player offline this long is shown
    # gone to the opponent; RoundSocket.tickSeconds: how often that is repeated.
    gone_after_s: float = 5.0
    gone_tick_s: float = 5.0
    game: GameSettings = field(default_factory=GameSettings)
    limits: RateLimits = field(default_factory=RateLimits)
    quirks: Quirks = field(default_factory=Quirks)


class Lobby:
    """All accounts, challenges and games, and the streams that report on them."""

    def __init__(self, settings: LobbySettings, base_url: Callable[[], str]) -> None:
        self.settings = settings
        self.base_url = base_url
        self.accounts = AccountBook()
        self.hub = Hub()
        self.limiters = Limiters(settings.limits)
        self.challenges: dict[str, Challenge] = {}
        self.games: dict[str, Game] = {}
        self._timers: dict[str, Timer] = {}
        self.finished_waiters: list[tuple[str, asyncio.Future[Game]]] = []
        # (account id, future): resolved with the next game that account starts
        self.started_waiters: list[tuple[str, asyncio.Future[Game]]] = []
        # Called with every game that ends (the arenas score their games here).
        self.finish_listeners: list[Callable[[Game], None]] = []
        # Every reply's status, by the account that asked (None: no valid token), so a test
        # can tell exactly which 429s a client earned.
        self.replies: Counter[tuple[str | None, int]] = Counter()
        # Every pair's latest games, and the rated games lila's botFarming left unrated.
        self.crosstables = Crosstables()
        self.unrated_games: list[str] = []

    # --- challenges ----------------------------------------------------------------------

    def create_challenge(self, challenger: Account, dest_name: str,
                         request: ChallengeRequest) -> Challenge:
        dest = self.accounts.by_name(dest_name)
        if dest is None:
            raise ApiError(400, f"No such user: {dest_name}")
        if dest.id == challenger.id:
            raise ApiError(400, "You cannot challenge yourself.")
        if dest.bot and request.rules:
            raise ApiError(400, "Rules not applicable for bots")
        if (challenger.bot or dest.bot) and request.time_control.speed == "ultraBullet":
            raise ApiError(400, "Bots cannot play UltraBullet. Choose a slower time control.")
        self._check_bot_day(challenger, dest)
        limits = self.settings.limits
        cost = limits.challenge_cost_bot if dest.bot else limits.challenge_cost_human
        # lila app/controllers/Challenge.scala `apiCreate`: limit.challengeUser, a composite
        # ("fast", then "slow": a refusal by the day keeps the minute's charge), answered by
        # `rateLimited`: {"error": ...} with no `ratelimit` object (ResponseBuilder.scala).
        wait_s = consume_all((self.limiters.challenge_minute, self.limiters.challenge_day),
                             challenger.id, cost)
        if wait_s:
            raise RateLimited(GENERIC_LIMIT, None, wait_s)
        return self._register(Challenge(challenger=challenger, dest=dest, request=request))

    def _register(self, challenge: Challenge) -> Challenge:
        """Store a new challenge, tell both sides, and let a real-time one expire."""
        request = challenge.request
        self.challenges[challenge.id] = challenge
        log.info("challenge %s: %s -> %s, %s %s%s", challenge.id, challenge.challenger.username,
                 challenge.dest.username, request.variant, request.time_control.describe(),
                 ", rated" if request.rated else "")
        for account in (challenge.dest, challenge.challenger):
            self.hub.send_event(account.id, self.challenge_event(challenge, account))
        if not request.keep_alive_stream:
            self.unseen(challenge)
        return challenge

    def unseen(self, challenge: Challenge) -> None:
        """Nobody keeps this challenge alive: a real-time one goes offline after a while."""
        if challenge.realtime and challenge.pending:
            self._arm(challenge.id, self.settings.challenge_expiry_s,
                      lambda: self.expire_challenge(challenge.id))

    def _check_bot_day(self, me: Account, other: Account) -> None:
        """The daily cap on games between bots, on creating and on accepting a challenge.

        lila modules/bot/src/main/BotLimit.scala `challengeLimitError`, answered by
        app/controllers/Challenge.scala `eitherBotLimitResponse`: our own cap is `Limited`,
        a 429 (`JsonLimited`); the other bot's cap is `OpponentLimit`, a 400 whose body has
        the same `ratelimit` key and the seconds until it lifts."""
        if not (me.bot and other.bot):
            return
        window = self.limiters.bot_games
        per_day = self.settings.limits.bot_games_per_day
        mine = window.wait_s(me.id)
        if mine > 0:
            raise RateLimited(
                f"You played {per_day} games against other bots today, "
                "please wait before challenging another bot.",
                BOT_DAY_KEY, mine, status=429)
        theirs = window.wait_s(other.id)
        if theirs > 0:
            until = datetime.fromtimestamp(time.time() + theirs, UTC)
            raise RateLimited(
                f"{other.username} played {per_day} games against other bots today, "
                f"please wait until {until.isoformat(timespec='milliseconds')} to challenge "
                "them.", BOT_DAY_KEY, theirs, status=400)

    def offer_rematch(self, game: Game, account: Account) -> Challenge:
        """A player offers a rematch after a game: a challenge with the colours swapped."""
        color = game.require_player(account)
        if game.playing:
            raise ApiError(400, "The game is not over")
        opponent = game.players[not color]
        request = ChallengeRequest(
            rated=game.rated, time_control=game.time_control,
            color="black" if color == chess.WHITE else "white", variant=game.variant,
            fen=game.initial_fen, keep_alive_stream=False, rules=game.rules)
        # ChallengeMaker.makeRematch: the offer's id is the next game's id
        # (Rematches.offer), `rematchOf` the game just played.
        return self._register(Challenge(challenger=account, dest=opponent, request=request,
                                        rematch_of=game.id))

    def challenge_event(self, challenge: Challenge, recipient: Account | None = None) -> Event:
        """A new challenge as the event stream sends it: with `compat` for a live event,
        where `bot` is false unless the recipient is a BOT (lila modules/api/src/main/
        EventStream.scala `challengeCompat`); without `compat` when `recipient` is None, as
        in the challenges a (re)opened stream sends first."""
        event: Event = {"type": "challenge", "challenge": self.challenge_json(challenge)}
        if recipient is not None:
            playable = challenge.request.time_control.speed != "ultraBullet"
            event["compat"] = {"bot": recipient.bot and playable, "board": playable}
        return event

    def challenge_json(self, challenge: Challenge, direction: str | None = None) -> Event:
        return challenge.json(self.base_url(), direction, self.hub.online())

    def find_challenge(self, account: Account, challenge_id: str) -> Challenge:
        challenge = self.challenges.get(challenge_id)
        if challenge is None or not challenge.involves(account):
            raise not_found("Challenge not found")
        return challenge

    def accept(self, account: Account, challenge_id: str) -> Game:
        challenge = self.find_challenge(account, challenge_id)
        if challenge.dest.id != account.id:
            raise not_found("Challenge not found")
        if not challenge.pending:
            raise ApiError(400, f"This challenge is {challenge.status}")
        self._check_bot_day(account, challenge.challenger)
        challenge.status = "accepted"
        self._disarm(challenge.id)
        challenger_white = challenge.final_color == "white"
        white, black = ((challenge.challenger, challenge.dest) if challenger_white
                        else (challenge.dest, challenge.challenger))
        request = challenge.request
        # The game takes the challenge's id (a rematch: the next id the offer named).
        game = self.start_game(white, black, request.time_control, request.variant,
                               request.fen, request.rated, source="friend",
                               game_id=challenge.id,
                               rules=request.rules)
        self._end_keepalive_streams(challenge.id, "accepted")
        return game

    def decline(self, account: Account, challenge_id: str, reason: str | None) -> None:
        challenge = self.find_challenge(account, challenge_id)
        if challenge.dest.id != account.id:
            raise not_found("Challenge not found")
        if not challenge.pending:
            raise ApiError(400, f"This challenge is {challenge.status}")
        challenge.decline_key, challenge.decline_text = decline_reason(reason)
        self._close(challenge, "declined", "challengeDeclined")

    def cancel(self, account: Account, challenge_id: str) -> None:
        challenge = self.challenges.get(challenge_id)
        if challenge is None or not challenge.involves(account):
            raise not_found("Challenge not found")
        if challenge.dest.id == account.id and challenge.pending:
            self.decline(account, challenge_id, "generic")
            return
        if challenge.status == "accepted":
            game = self.games.get(challenge.id)
            if game is not None and game.playing:
                if not game.abortable:
                    raise ApiError(400, "The game can no longer be aborted")
                game.abort(account)
            return
        if not challenge.pending:
            raise ApiError(400, f"This challenge is {challenge.status}")
        self._withdraw(challenge)

    def expire_challenge(self, challenge_id: str) -> None:
        """A real-time challenge its challenger has not been seen on for a while goes
        "offline", silently (no event to anyone) and can still be accepted: lila
        modules/challenge/src/main/ChallengeApi.scala `sweep` (`realTimeUnseenSince` 20 s,
        then `offline`, which only updates the status, ChallengeRepo.scala)."""
        challenge = self.challenges.get(challenge_id)
        if challenge is not None and challenge.status == "created":
            challenge.status = "offline"
            log.info("challenge %s offline (its challenger has not been seen)", challenge.id)

    def _withdraw(self, challenge: Challenge) -> None:
        self._close(challenge, "canceled", "challengeCanceled")

    def _close(self, challenge: Challenge, status: str, event_type: str) -> None:
        """End a pending challenge: tell both sides, and end its keep-alive streams."""
        challenge.status = status
        self._disarm(challenge.id)
        log.info("challenge %s %s%s", challenge.id, status,
                 f" ({challenge.decline_key})" if challenge.decline_key else "")
        event = {"type": event_type, "challenge": self.challenge_json(challenge)}
        self.hub.send_event(challenge.dest.id, event)
        self.hub.send_event(challenge.challenger.id, event)
        self._end_keepalive_streams(challenge.id, status)

    def _end_keepalive_streams(self, challenge_id: str, done: str) -> None:
        for stream in list(self.hub.other_streams):
            if stream.kind == "challenge" and stream.key == challenge_id:
                stream.send({"done": done})
                stream.close()

    def online(self) -> frozenset[str]:
        """Who is online: an account with an open stream, and a challenger still seen on its
        challenge (lila: the challenge page pings it while the player is on lichess.org;
        ChallengeApi.scala `ping`; once unseen for 20 s `sweep` makes it offline)."""
        seen = {c.challenger.id for c in self.challenges.values()
                if c.status == "created" and not c.challenger.anonymous}
        return self.hub.online() | {s.account_id for s in self.hub.all_streams()} | seen

    def pending_for(self, account: Account) -> list[Challenge]:
        return [c for c in self.challenges.values() if c.pending and c.involves(account)]

    # --- games ---------------------------------------------------------------------------

    def start_game(self, white: Account, black: Account, time_control: TimeControl,
                   variant: str, fen: str | None, rated: bool, source: str,
                   game_id: str | None = None, rules: frozenset[str] = frozenset(),
                   tournament_id: str | None = None) -> Game:
        initial_fen = None if variant == "standard" else fen
        game = Game(white=white, black=black, variant=variant, time_control=time_control,
                    rated=rated, initial_fen=initial_fen, source=source,
                    settings=self.settings.game, observer=self, game_id=game_id, rules=rules)
        game.tournament_id = tournament_id
        self.games[game.id] = game
        log.info("game %s started: %s (white) - %s (black), %s %s", game.id,
                 white.username, black.username, variant, time_control.describe())
        for account in (white, black):
            account.games_played += 1
        if white.bot and black.bot:
            self.limiters.bot_games.consume(white.id)
            self.limiters.bot_games.consume(black.id)
        for color in (chess.WHITE, chess.BLACK):
            self.hub.send_event(game.players[color].id, {
                "type": "gameStart", "game": game_event_info_json(game, color)})
        for account_id, future in self.started_waiters:
            if account_id in (white.id, black.id) and not future.done():
                future.set_result(game)
        self.started_waiters = [(a, f) for a, f in self.started_waiters if not f.done()]
        return game

    def find_game(self, game_id: str) -> Game:
        game = self.games.get(game_id)
        if game is None:
            raise not_found("No such game")
        return game

    def ongoing(self, account: Account) -> list[tuple[Game, chess.Color]]:
        """The account's ongoing games, most urgent first (my turn, least time)."""
        found = [(g, c) for g in self.games.values() if g.playing
                 for c in [g.color_of(account)] if c is not None]
        return sorted(found, key=lambda gc: (gc[0].turn != gc[1], gc[0].remaining_ms(gc[1])))

    # GameObserver ------------------------------------------------------------------------

    def state_changed(self, game: Game) -> None:
        state = game_state_json(game)
        self.hub.send_game(game.id, lambda _s: state)

    def chat_line(self, game: Game, line: ChatLine) -> None:
        event = {"type": "chatLine", "room": line.room, "username": line.username,
                 "text": line.text}

        def for_subscriber(subscriber: Subscriber) -> Event | None:
            account = self.accounts.by_name(subscriber.account_id)
            # Only bots receive the spectator room on their game stream.
            if line.room == "spectator" and not (account is not None and account.bot):
                return None
            return event

        self.hub.send_game(game.id, for_subscriber)

    def finished(self, game: Game) -> None:
        self._rate(game)
        state = game_state_json(game)
        quirks = self.settings.quirks
        if quirks.finish_first:
            self._send_finish(game)
        if quirks.split_final_state or quirks.stale_final_state:
            started = {k: v for k, v in state.items() if k != "winner"}
            started["status"] = "started"
            self.hub.send_game(game.id, lambda _s: started)
        if not (quirks.stale_final_state or quirks.omit_final_state):
            self.hub.send_game(game.id, lambda _s: state)
        self.hub.close_game(game.id)
        if not quirks.finish_first:
            self._send_finish(game)
        self._disarm(f"gone:{game.id}")
        for game_id, future in list(self.finished_waiters):
            if game_id == game.id and not future.done():
                future.set_result(game)
        self.finished_waiters = [(g, f) for g, f in self.finished_waiters if not f.done()]
        for listener in list(self.finish_listeners):
            listener(game)
        log.info("game %s ended: %s, winner %s", game.id, game.status,
                 color_name(game.winner) if game.winner is not None else "none")

    def _send_finish(self, game: Game) -> None:
        for color in (chess.WHITE, chess.BLACK):
            self.hub.send_event(game.players[color].id, {
                "type": "gameFinish", "game": game_event_info_json(game, color)})

    def _rate(self, game: Game) -> None:
        white, black = game.players[chess.WHITE], game.players[chess.BLACK]
        if game.status == "aborted":
            return
        # Finisher.scala updateCountAndPerfs: every finished game but an aborted one counts,
        # a noStart loss too (in an arena, PerfsUpdater.save rates it).
        farming = self._note_in_crosstable(game)
        for account, color in ((white, chess.WHITE), (black, chess.BLACK)):
            if game.winner is None:
                account.draws += 1
            elif game.winner == color:
                account.wins += 1
            else:
                account.losses += 1
        # lila modules/round/src/main/PerfsUpdater.scala `save`: rated, finished, and two
        # plies played unless it is a tournament game.
        if not game.rated or (game.plies < 2 and game.tournament_id is None):
            return
        if farming:
            # PerfsUpdater.save: botFarming, so no rating diffs and the ratings stay.
            self.unrated_games.append(game.id)
            log.info("game %s left unrated: the first %d plies and the winner repeat one "
                     "of the pair's last %d games (lila botFarming)", game.id, SAME_PLIES,
                     PREV_GAMES)
            return
        score = 0.5 if game.winner is None else (1.0 if game.winner == chess.WHITE else 0.0)
        expected = 1.0 / (1.0 + 10 ** ((game.ratings_before[chess.BLACK]
                                        - game.ratings_before[chess.WHITE]) / 400.0))
        diff = round(ELO_K * (score - expected))
        game.rating_diffs = {chess.WHITE: diff, chess.BLACK: -diff}
        for color, account in game.players.items():
            perf = account.perf(game.perf)
            perf.rating += game.rating_diffs[color]
            perf.prog = game.rating_diffs[color]
            perf.games += 1

    def _note_in_crosstable(self, game: Game) -> bool:
        """Add a finished game to its pair's crosstable; True if lila's botFarming leaves it
        unrated (sandbox/farming.py: FarmBoostDetection.scala, CrosstableApi.scala)."""
        white, black = game.players[chess.WHITE], game.players[chess.BLACK]
        # Finisher.updateCountAndPerfs: both players logged in, not against oneself.
        if white.anonymous or black.anonymous or white.id == black.id:
            return False
        winner_id = None if game.winner is None else game.players[game.winner].id
        result = PairResult(game.id, winner_id, opening_sans(
            variant_board(game.variant, game.initial_fen), game.board.move_stack))
        farming = (game.rated and (white.bot or black.bot)
                   and self.crosstables.is_bot_farming(white.id, black.id, result))
        self.crosstables.add(white.id, black.id, result)
        return farming

    # --- presence ------------------------------------------------------------------------

    def game_stream_opened(self, game: Game, color: chess.Color) -> None:
        """lila RoundAsyncActor.scala `setOnline`: `gone: false` only for a player who had
        become claimable (`isLongGone`); one who comes back sooner is not announced."""
        if game.long_gone(color):
            self._tell_opponent(game, color, {"type": "opponentGone", "gone": False})
        game.gone_since_s.pop(color, None)

    def game_stream_closed(self, game: Game, color: chess.Color) -> None:
        account = game.players[color]
        # Only real-time games know absent players (no claims in correspondence).
        if not game.playing or game.clock is None or self.hub.watching(game.id, account.id):
            return
        game.gone_since_s.setdefault(color, game.settings.now())
        if f"gone:{game.id}" not in self._timers:
            self._arm(f"gone:{game.id}", self.settings.gone_after_s,
                      lambda: self._gone_tick(game))

    def _gone_tick(self, game: Game) -> None:
        """lila RoundAsyncActor.scala `Tick`, every RoundSocket.tickSeconds: once both players
        have moved, a player offline (while the other is online) for more than
        `gone_after_s` is announced with the seconds left before the win may be claimed
        (only while their clock outlasts that by 3 s), and with 0 once it may, repeated on
        every tick."""
        if not game.playing:
            return
        for color in (chess.WHITE, chess.BLACK):
            since = game.gone_since_s.get(color)
            other = game.players[not color]
            if since is None or not self.hub.watching(game.id, other.id) \
                    or not (game.has_moved(chess.WHITE) and game.has_moved(chess.BLACK)):
                continue
            offline_s = game.settings.now() - since
            if offline_s < self.settings.gone_after_s:
                continue
            left_s = game.disconnect_timeout_s(color) - offline_s
            if left_s <= 0:
                self._tell_opponent(game, color, {"type": "opponentGone", "gone": True,
                                                  "claimWinInSeconds": 0})
            elif game.remaining_ms(color) > left_s * 1000 + 3000:
                # Whole seconds, truncated as lila does (`millis / 1000`): 0 may come
                # up to a second before the claim is allowed.
                self._tell_opponent(game, color, {"type": "opponentGone", "gone": True,
                                                  "claimWinInSeconds": int(left_s)})
        if game.gone_since_s:
            self._arm(f"gone:{game.id}", self.settings.gone_tick_s,
                      lambda: self._gone_tick(game))

    def _tell_opponent(self, game: Game, gone: chess.Color, event: Event) -> None:
        opponent_id = game.players[not gone].id
        if game.playing:
            self.hub.send_game(game.id, lambda s: event if s.account_id == opponent_id else None)

    # --- event stream --------------------------------------------------------------------

    def event_stream_backlog(self, account: Account) -> list[Event]:
        """What a (re)opened event stream sends first: ongoing games, then the challenges to
        the account still `created` (not those gone offline), without `compat`: lila
        app/controllers/Api.scala `eventStream` (`createdByDestId`) and EventStream.scala."""
        events: list[Event] = [
            {"type": "gameStart", "game": game_event_info_json(game, color)}
            for game, color in self.ongoing(account)]
        events.extend(self.challenge_event(c) for c in self.pending_for(account)
                      if c.dest.id == account.id and c.status == "created")
        return events

    def full(self, game: Game) -> Event:
        return game_full_json(game)

    # --- timers --------------------------------------------------------------------------

    def _arm(self, key: str, delay_s: float, action: Callable[[], None]) -> None:
        self._disarm(key)

        def fire() -> None:
            self._timers.pop(key, None)
            action()

        self._timers[key] = self.settings.game.clock.call_later(delay_s, fire)

    def _disarm(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def shutdown(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for game in self.games.values():
            game.cancel_timers()
        for stream in self.hub.all_streams():
            stream.close()
