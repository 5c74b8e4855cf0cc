"""A local Lichess-compatible server for tests and the demo.

It speaks the Bot API, enough of the Board API to host an opponent, challenges, the event
stream and game export, as the official OpenAPI spec describes them and as lila behaves
where the spec is silent (error bodies, limits, clocks, castling notation, stream rules).

Modules, one job each:
    server      SandboxServer (in-process use by tests), run_sandbox and `python -m sandbox`
    routes      the HTTP handlers and the error/fault middleware
    lobby       challenges, pairing, results, presence (opponentGone), end-of-game quirks
    games       one game: board, moves, offers, chat, timers and every way it ends
    clock       Fischer clocks in milliseconds and correspondence deadlines
    challenges  the challenge form, its validation, decline reasons, ChallengeJson
    views       the JSON objects of the event and game streams and the account endpoints
    streams     ND-JSON streams with keep-alives; who listens to what
    ratelimit   lila-shaped limits and their 429 bodies (JSON, or HTML on demand)
    faults      injected 5xx, delays, 429s; dropped and silent streams; `--fault` parsing
    opponent    a sandbox-side player (random or a UCI engine) over HTTP
    pgn         `GET /game/export/{id}` as PGN or GameJson
    accounts    accounts, scopes and bearer tokens
    timecontrol speeds, perfs and variants with lila's names and thresholds
    online      stand-ins for the opening explorer, cloud evaluation and tablebase

Endpoints: /api/account, /api/account/playing, /api/token/test, /api/bot/account/upgrade,
/api/bot/online, /api/user/{username}, /api/users/status, /api/stream/event,
/api/challenge (list, create, show, accept, decline, cancel), /api/{bot,board}/game/...
(stream, move, chat, abort, resign, draw, takeback, claim-victory, claim-draw),
/api/round/{id}/add-time/{seconds} and
/game/export/{id}.
"""
