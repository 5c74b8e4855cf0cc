"""HTTP handlers of the arena endpoints: show, join and withdraw.

lila app/controllers/Tournament.scala: `show` is open (a token only adds `me` and one's own
verdicts); `apiJoin` and `apiWithdraw` are ScopedBody(_.Tournament.Write, _.Bot.Play,
_.Web.Mobile) (web:mobile is not a scope a personal token can hold)."""

from __future__ import annotations

from aiohttp import web

from sandbox.accounts import BOT_PLAY, TOURNAMENT_WRITE, Account
from sandbox.challenges import TRUE_WORDS
from sandbox.errors import json_response, ok
from sandbox.routes import Api, read_form
from sandbox.tournaments import Arenas

# lila Tournament.scala apiJoin / apiWithdraw: Scoped(_.Tournament.Write, _.Bot.Play, ...)
TOURNAMENT_JOIN_SCOPES = (TOURNAMENT_WRITE, BOT_PLAY)
TOURNAMENT_WITHDRAW_SCOPES = (TOURNAMENT_WRITE, BOT_PLAY)


class TournamentApi:
    def __init__(self, api: Api, arenas: Arenas) -> None:
        self.api = api
        self.arenas = arenas

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/api/tournament/{id}", self.show),
            web.post("/api/tournament/{id}/join", self.join),
            web.post("/api/tournament/{id}/withdraw", self.withdraw),
        ]

    def _optional_account(self, request: web.Request) -> Account | None:
        header = request.headers.get("Authorization")
        if not header:
            return None
        return self.api.auth(request)

    async def show(self, request: web.Request) -> web.StreamResponse:
        arena = self.arenas.find(request.match_info["id"])
        try:
            page = max(1, int(request.query.get("page", "1")))
        except ValueError:
            page = 1
        return json_response(self.arenas.json(arena, self._optional_account(request), page))

    async def join(self, request: web.Request) -> web.StreamResponse:
        account = self.api.auth(request, *TOURNAMENT_JOIN_SCOPES)
        form = await read_form(request)
        # TournamentForm.joinForm: a form that does not bind is taken as empty.
        asap = form.get("pairMeAsap", "").strip().lower() in TRUE_WORDS
        self.arenas.join(account, request.match_info["id"], password=form.get("password"),
                         team=form.get("team"), pair_me_asap=asap)
        return ok()

    async def withdraw(self, request: web.Request) -> web.StreamResponse:
        account = self.api.auth(request, *TOURNAMENT_WITHDRAW_SCOPES)
        self.arenas.withdraw(account, request.match_info["id"])
        return ok()
