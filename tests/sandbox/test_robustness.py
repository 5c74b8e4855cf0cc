"""Bad input never crashes the sandbox: a seeded storm of odd requests gets only 4xx/2xx
replies, each with a body the spec allows."""

from __future__ import annotations

import random

from tests.sandbox.conftest import Duel

PATHS = [
    "/api/account", "/api/account/playing?nb={n}", "/api/token/test", "/api/bot/online?nb={n}",
    "/api/challenge", "/api/challenge/{user}", "/api/challenge/{id}/show",
    "/api/challenge/{id}/accept", "/api/challenge/{id}/decline", "/api/challenge/{id}/cancel",
    "/api/{api}/game/{id}/move/{word}?offeringDraw={word}", "/api/{api}/game/{id}/chat",
    "/api/{api}/game/{id}/abort", "/api/{api}/game/{id}/resign",
    "/api/{api}/game/{id}/draw/{word}", "/api/{api}/game/{id}/takeback/{word}",
    "/api/{api}/game/{id}/claim-victory", "/api/{api}/game/{id}/claim-draw",
    "/game/export/{id}", "/api/bot/account/upgrade",
]
WORDS = ["", "0000", "e2e4", "e7e8q", "yes", "no", "true", "%00", "x" * 300, "é", "-1", "null",
         "e1g1", "a1a1", "{}", "[]"]
FIELDS = ["clock.limit", "clock.increment", "days", "rated", "color", "variant", "fen",
          "reason", "room", "text", "rules"]  # keepAliveStream would hold the reply open


async def test_a_storm_of_odd_requests_gets_only_client_errors(duel: Duel) -> None:
    rng = random.Random(20)
    game_id = await duel.start_game()
    users = ["bot1", "human1", "nobody", "", "ai", "BOT1"]
    ids = [game_id, "nosuchgm", "", "x" * 40]
    statuses: set[int] = set()
    for _ in range(300):
        template = rng.choice(PATHS)
        path = template.format(n=rng.choice(["0", "-5", "abc", "9999", "3"]),
                               user=rng.choice(users), id=rng.choice(ids),
                               api=rng.choice(["bot", "board"]), word=rng.choice(WORDS))
        form = {rng.choice(FIELDS): rng.choice(WORDS) for _ in range(rng.randint(0, 4))}
        client = rng.choice([duel.bot, duel.human])
        method = rng.choice(["GET", "POST", "POST"])
        if rng.random() < 0.3:
            reply = await client.request(method, path, json_body=rng.choice(
                [form, [1, 2], "text", None, {"clock.limit": None, "rated": True}]))
        else:
            reply = await client.request(method, path, data=form)
        statuses.add(reply.status)
        assert reply.status < 500, (method, path, form, reply.text)
    assert {200, 400, 404} <= statuses
