"""HTTP handlers: the Bot, Board, Challenge, Account and Game-export endpoints."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

import chess
from aiohttp import web

from sandbox import pgn, streams
from sandbox.accounts import (
    BOARD_PLAY,
    BOT_PLAY,
    CHALLENGE_READ,
    CHALLENGE_WRITE,
    Account,
)
from sandbox.challenges import ChallengeRequest, parse_bool
from sandbox.errors import ApiError, RateLimited, form_error, json_response, ok
from sandbox.faults import FaultPlan, RateLimitedFault, apply
from sandbox.games import Game
from sandbox.lobby import Lobby
from sandbox.ratelimit import ACCOUNT_LIMIT, EVENT_STREAM_LIMIT, GENERIC_LIMIT, too_many
from sandbox.views import playing_entry_json, user_extended_json, user_json

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
TRUEISH = frozenset({"1", "true", "True", "on", "yes"})
MAX_PLAYING = 50
MAX_ONLINE = 512
MAX_STATUS_IDS = 100
# Each endpoint's scopes, one line per route, as lila's controller declares them with
# Scoped(...), ScopedBody(...) or AnonOrScoped(...): a token holding any one passes; an
# empty tuple lets any valid token pass (`Scoped()`).
ACCOUNT_SCOPES: tuple[str, ...] = ()  # Account.scala apiMe, apiNowPlaying: Scoped()
EVENT_STREAM_SCOPES = (CHALLENGE_READ, BOT_PLAY, BOARD_PLAY)  # Api.scala eventStream
CHALLENGE_LIST_SCOPES = (CHALLENGE_READ,)  # Challenge.scala apiList: ScopedBody
CHALLENGE_SHOW_SCOPES = (CHALLENGE_READ,)  # Challenge.scala apiShow: AnonOrScoped
# Challenge.scala apiCreate (ScopedBody), apiAccept (AnonOrScoped), apiDecline (ScopedBody),
# apiCancel (Scoped): challenge:write, bot:play or board:play.
CHALLENGE_SCOPES = (CHALLENGE_WRITE, BOT_PLAY, BOARD_PLAY)
UPGRADE_SCOPES = (BOT_PLAY,)  # PlayApi.scala botCommand "account/upgrade": Scoped(_.Bot.Play)
ADD_TIME_SCOPES = (CHALLENGE_WRITE,)  # Round.scala apiAddTime: Scoped(_.Challenge.Write)
# The game endpoints (play_auth): PlayApi.scala Scoped(_.Bot.Play) / Scoped(_.Board.Play).
BOT_GAME_SCOPES = (BOT_PLAY,)
BOARD_GAME_SCOPES = (BOARD_PLAY,)


async def read_form(request: web.Request) -> dict[str, str]:
    """Form fields from a urlencoded or JSON body (berserk sends JSON), plus the query."""
    fields = {k: v for k, v in request.query.items()}
    if not request.can_read_body:
        return fields
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except json.JSONDecodeError as exc:
            raise ApiError(400, f"Invalid JSON body: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON body: expected an object")
        for key, value in body.items():
            if value is None:
                continue
            fields[key] = (("true" if value else "false") if isinstance(value, bool)
                           else str(value))
        return fields
    if request.content_type == "text/plain":
        return fields
    post = await request.post()
    fields.update({k: v for k, v in post.items() if isinstance(v, str)})
    return fields


def _int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name}: expected an integer") from None
    return max(low, min(high, value))


class Api:
    """The aiohttp application's handlers, over one Lobby."""

    def __init__(self, lobby: Lobby, faults: FaultPlan) -> None:
        self.lobby = lobby
        self.faults = faults

    # --- plumbing ------------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        token_owner = self._token_owner(request)
        response = await self._reply(request, handler, token_owner)
        self.lobby.replies[(token_owner, response.status)] += 1
        return response

    async def _reply(self, request: web.Request, handler: Handler,
                     token_owner: str | None) -> web.StreamResponse:
        html = self.lobby.settings.limits.html_bodies
        try:
            if token_owner is not None:
                # The overall per-token limit (see RateLimits.requests_per_minute): a bare
                # 429 with no `ratelimit` object, as the proxy in front of lila answers.
                wait_s = self.lobby.limiters.requests.consume(token_owner.lower())
                if wait_s:
                    return too_many(GENERIC_LIMIT, None, wait_s, html=html)
            fired = self.faults.take(request.method, request.path, token_owner,
                                     self.lobby.settings.game.clock.now())
            if fired:
                injected = await apply(fired, request)
                if injected is not None:
                    return injected
            return await handler(request)
        except RateLimitedFault as exc:
            if exc.html:
                return too_many(exc.message, None, exc.wait_s, html=True)
            return exc.response()
        except RateLimited as exc:
            if html:
                return too_many(exc.message, None, exc.wait_s, html=True, status=exc.status)
            return exc.response()
        except ApiError as exc:
            return exc.response()
        except web.HTTPNotFound:
            return json_response({"error": "Not found"}, status=404)
        except web.HTTPMethodNotAllowed as exc:
            return json_response({"error": f"Method {exc.method} not allowed"}, status=405)
        except web.HTTPException:
            raise
        except Exception:
            log.exception("sandbox handler failed: %s %s", request.method, request.path)
            return json_response({"error": "Internal server error"}, status=500)

    def _token_owner(self, request: web.Request) -> str | None:
        _, _, token = request.headers.get("Authorization", "").partition(" ")
        account = self.lobby.accounts.by_token(token.strip())
        return account.username if account else None

    def auth(self, request: web.Request, *scopes: str) -> Account:
        account = self.lobby.accounts.authenticate(request.headers.get("Authorization"))
        account.require_scope(*scopes)
        return account

    def play_auth(self, request: web.Request) -> Account:
        """Bot API calls need a BOT with bot:play; Board API calls a human with board:play."""
        if request.match_info["api"] == "bot":
            account = self.auth(request, *BOT_GAME_SCOPES)
            account.require_bot()
        else:
            account = self.auth(request, *BOARD_GAME_SCOPES)
            account.require_not_bot()
        return account

    def routes(self) -> list[web.RouteDef]:
        play = r"/api/{api:bot|board}/game"
        return [
            web.get("/api/account", self.account),
            web.get("/api/account/playing", self.playing),
            web.post("/api/token/test", self.token_test),
            web.post("/api/bot/account/upgrade", self.upgrade),
            web.get("/api/bot/online", self.online),
            web.get("/api/user/{username}", self.public_user),
            web.get("/api/users/status", self.users_status),
            web.get("/api/stream/event", self.event_stream),
            web.get("/api/challenge", self.list_challenges),
            web.post("/api/challenge/{username}", self.create_challenge),
            web.get("/api/challenge/{id}/show", self.show_challenge),
            web.post("/api/challenge/{id}/accept", self.accept),
            web.post("/api/challenge/{id}/decline", self.decline),
            web.post("/api/challenge/{id}/cancel", self.cancel),
            web.get(play + "/stream/{id}", self.game_stream),
            web.post(play + "/{id}/move/{move}", self.move),
            web.post(play + "/{id}/chat", self.post_chat),
            web.get(play + "/{id}/chat", self.get_chat),
            web.post(play + "/{id}/{action:abort|resign|claim-victory|claim-draw}",
                     self.command),
            web.post(play + "/{id}/{action:draw|takeback}/{accept}", self.command),
            web.post("/api/round/{id}/add-time/{seconds}", self.add_time),
            web.get("/game/export/{id}", self.export),
        ]

    # --- account -------------------------------------------------------------------------

    async def account(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *ACCOUNT_SCOPES)
        wait_s = self.lobby.limiters.account.consume(account.id)
        if wait_s:
            # lila app/controllers/Account.scala `apiMe`: `rateLimited(msg)`, a bare
            # {"error": msg} (app/http/ResponseBuilder.scala), no `ratelimit` object.
            raise RateLimited(ACCOUNT_LIMIT, None, wait_s)
        playing = len(self.lobby.ongoing(account))
        return json_response(user_extended_json(account, self.lobby.base_url(), playing))

    async def playing(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *ACCOUNT_SCOPES)
        nb = _int_param(request, "nb", 9, 1, MAX_PLAYING)
        games = self.lobby.ongoing(account)
        return json_response({
            "nbMyTurn": sum(1 for g, c in games if g.turn == c),
            "nowPlaying": [playing_entry_json(g, c) for g, c in games[:nb]],
        })

    async def token_test(self, request: web.Request) -> web.StreamResponse:
        text = await request.text()
        tokens = [t.strip() for t in text.split(",") if t.strip()]
        if len(tokens) > 1000:
            raise ApiError(400, "At most 1000 tokens")
        result: dict[str, object] = {}
        for token in tokens:
            account = self.lobby.accounts.by_token(token)
            result[token] = None if account is None else {
                "userId": account.id, "scopes": ",".join(sorted(account.scopes)),
                "expires": None}
        return json_response(result)

    async def upgrade(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *UPGRADE_SCOPES)
        if account.bot:
            return ok()
        if account.games_played > 0:
            raise ApiError(400, "You already have games played. Make a new account.")
        account.bot = True
        return ok()

    async def online(self, request: web.Request) -> web.StreamResponse:
        nb = _int_param(request, "nb", 100, 1, MAX_ONLINE)
        online = self.lobby.hub.online()
        bots = [a for a in self.lobby.accounts.all() if a.bot and a.id in online][:nb]
        body = b"".join(streams.encode(user_json(a)) for a in bots)
        return web.Response(body=body, content_type=streams.NDJSON)

    async def public_user(self, request: web.Request) -> web.StreamResponse:
        account = self.lobby.accounts.by_name(request.match_info["username"])
        if account is None:
            raise ApiError(404, "Not found")
        playing = len(self.lobby.ongoing(account))
        return json_response(user_extended_json(account, self.lobby.base_url(), playing))

    async def users_status(self, request: web.Request) -> web.StreamResponse:
        """lila app/controllers/Api.scala `usersStatus`: the first 100 ids, unknown ones left
        out, none at all a 400; `online` and `playing` only when true (lila's `add` of a
        Boolean leaves a false one out)."""
        ids = [i.strip() for i in request.query.get("ids", "").split(",") if i.strip()]
        if not ids:
            raise ApiError(400, "No user ids provided")
        online = self.lobby.online()
        found = [a for a in map(self.lobby.accounts.by_name, ids[:MAX_STATUS_IDS])
                 if a is not None]
        return json_response([
            {"id": a.id, "name": a.username, **({"title": a.title} if a.title else {}),
             **({"online": True} if a.id in online else {}),
             **({"playing": True} if self.lobby.ongoing(a) else {})}
            for a in found])

    # --- event stream ----------------------------------------------------------------------

    async def event_stream(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *EVENT_STREAM_SCOPES)
        token = request.headers.get("Authorization", "")
        wait_s = self.lobby.limiters.event_stream.consume(token)
        if wait_s:
            # lila app/controllers/Api.scala `eventStream`: `rateLimited(msg)`, no
            # `ratelimit` object (app/http/ResponseBuilder.scala).
            raise RateLimited(EVENT_STREAM_LIMIT, None, wait_s)
        hub = self.lobby.hub
        subscriber = hub.open_event_stream(account.id)
        return await streams.serve(
            request, subscriber, self.lobby.settings.keepalive_s,
            first=self.lobby.event_stream_backlog(account),
            on_close=lambda: hub.close_event_stream(subscriber))

    # --- challenges ------------------------------------------------------------------------

    async def list_challenges(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_LIST_SCOPES)
        pending = self.lobby.pending_for(account)
        return json_response({
            "in": [self.lobby.challenge_json(c, "in") for c in pending
                   if c.dest.id == account.id],
            "out": [self.lobby.challenge_json(c, "out") for c in pending
                    if c.challenger.id == account.id],
        })

    async def create_challenge(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_SCOPES)
        form = await read_form(request)
        if request.match_info["username"] == "ai":
            raise ApiError(400, "The sandbox has no Lichess AI: challenge one of its accounts")
        challenge_request = ChallengeRequest.parse(form)
        challenge = self.lobby.create_challenge(
            account, request.match_info["username"], challenge_request)
        body = self.lobby.challenge_json(challenge, "out")
        if not challenge_request.keep_alive_stream:
            return json_response(body)
        subscriber = streams.Subscriber("challenge", account.id, challenge.id)
        hub = self.lobby.hub
        hub.other_streams.append(subscriber)

        def closed() -> None:
            hub.other_streams.remove(subscriber)
            # Closing the stream only stops its pings (lila ChallengeKeepAliveStream.scala):
            # the challenge goes offline once unseen for a while, like any other.
            self.lobby.unseen(challenge)

        return await streams.serve(request, subscriber, self.lobby.settings.keepalive_s,
                                   first=[body], on_close=closed)

    async def show_challenge(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_SHOW_SCOPES)
        challenge = self.lobby.find_challenge(account, request.match_info["id"])
        if challenge.rematch_of is not None:
            # lila stores no challenge for a rematch offer to a bot: accept and decline find
            # none and turn to BotPlayer.rematchAccept / rematchDecline (Challenge.scala
            # apiAccept `tryRematch`, apiDecline), so apiShow's `api.byId` finds nothing.
            raise ApiError(404, "Not found")
        direction = "out" if challenge.challenger.id == account.id else "in"
        return json_response(self.lobby.challenge_json(challenge, direction))

    async def accept(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_SCOPES)
        self.lobby.accept(account, request.match_info["id"])
        return ok()

    async def decline(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_SCOPES)
        form = await read_form(request)
        self.lobby.decline(account, request.match_info["id"], form.get("reason"))
        return ok()

    async def cancel(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *CHALLENGE_SCOPES)
        self.lobby.cancel(account, request.match_info["id"])
        return ok()

    # --- games -----------------------------------------------------------------------------

    def _my_game(self, request: web.Request) -> tuple[Account, Game, chess.Color]:
        account = self.play_auth(request)
        game = self.lobby.find_game(request.match_info["id"])
        color = game.require_player(account)
        if game.speed == "ultraBullet":  # compat: neither API plays UltraBullet
            api = "Bot" if request.match_info["api"] == "bot" else "Board"
            raise ApiError(400, f"This game cannot be played with the {api} API.")
        return account, game, color

    async def game_stream(self, request: web.Request) -> web.StreamResponse:
        _, game, color = self._my_game(request)
        lobby = self.lobby
        game.check_flag()
        if not game.playing:
            return self._finished_stream(game)
        subscriber = lobby.hub.open_game_stream(
            game.id, game.players[color].id, request.headers.get("User-Agent", ""))
        lobby.game_stream_opened(game, color)

        def closed() -> None:
            lobby.hub.close_game_stream(subscriber)
            lobby.game_stream_closed(game, color)

        # A client that reconnects after the opponent left learns it on the next tick:
        # lila repeats opponentGone every few seconds (RoundAsyncActor.scala `Tick`).
        first = [lobby.full(game)]
        return await streams.serve(request, subscriber, lobby.settings.game_keepalive_s,
                                   first=first, on_close=closed)

    def _finished_stream(self, game: Game) -> web.StreamResponse:
        body = streams.encode(self.lobby.full(game))
        return web.Response(body=body, content_type=streams.NDJSON)

    async def move(self, request: web.Request) -> web.StreamResponse:
        account, game, _ = self._my_game(request)
        raw_offer = request.query.get("offeringDraw")
        offering = None if raw_offer is None else parse_bool(request.query, "offeringDraw")
        game.move(account, request.match_info["move"], offering)
        return ok()

    async def post_chat(self, request: web.Request) -> web.StreamResponse:
        account, game, _ = self._my_game(request)
        form = await read_form(request)
        game.say(account, form.get("room", ""), form.get("text", ""))
        return ok()

    async def get_chat(self, request: web.Request) -> web.StreamResponse:
        _, game, _ = self._my_game(request)
        return json_response([{"user": line.username, "text": line.text}
                              for line in game.chat if line.room == "player"])

    async def command(self, request: web.Request) -> web.StreamResponse:
        account, game, _ = self._my_game(request)
        action = request.match_info["action"]
        accept = request.match_info.get("accept", "") in TRUEISH
        if action == "abort":
            game.abort(account)
        elif action == "resign":
            game.resign(account)
        elif action == "claim-victory":
            game.claim_victory(account)
        elif action == "claim-draw":
            game.claim_draw(account)
        elif action == "draw":
            game.draw(account, accept)
        elif action == "takeback":
            game.takeback(account, accept)
        return ok()

    async def add_time(self, request: web.Request) -> web.StreamResponse:
        account = self.auth(request, *ADD_TIME_SCOPES)
        game = self.lobby.find_game(request.match_info["id"])
        try:
            seconds = int(request.match_info["seconds"])
        except ValueError:
            raise form_error("seconds", "Invalid value: expected an integer") from None
        game.add_time(account, seconds)
        return ok()

    # --- export ----------------------------------------------------------------------------

    async def export(self, request: web.Request) -> web.StreamResponse:
        game = self.lobby.find_game(request.match_info["id"])
        options = pgn.ExportOptions.from_query(request.query)
        if "application/json" in request.headers.get("Accept", ""):
            owner = self._token_owner(request)
            requester = None if owner is None else self.lobby.accounts.by_name(owner)
            return json_response(pgn.game_json(game, self.lobby.base_url(), options,
                                               requester))
        return web.Response(text=pgn.export(game, self.lobby.base_url(), options),
                            content_type="application/x-chess-pgn")
