"""Check sandbox replies against the official OpenAPI spec files in tests/data/lichess.

Every JSON body and every ND-JSON line a test receives through `SpecClient` is validated
against the schema of the operation that produced it (the spec's tag file, matched by
method and path), or against Error.yaml for error statuses the spec leaves undocumented.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

# How long a test waits for an event before it fails: only a guard against a hang, so
# generous enough for a machine where other work takes most of the cores.
GUARD_S = 60.0
SPEC_DIR = Path(__file__).resolve().parent.parent / "data" / "lichess"

# (method, path regex) -> the spec's tag file for that operation.
OPERATIONS: list[tuple[str, str, str]] = [
    ("GET", r"/api/account", "account/api-account.yaml"),
    ("GET", r"/api/account/playing", "games/api-account-playing.yaml"),
    ("POST", r"/api/token/test", "oauth/api-token-test.yaml"),
    ("POST", r"/api/bot/account/upgrade", "bot/api-bot-account-upgrade.yaml"),
    ("GET", r"/api/bot/online", "bot/api-bot-online.yaml"),
    ("GET", r"/api/stream/event", "board/api-stream-event.yaml"),
    ("GET", r"/api/challenge", "challenges/api-challenge.yaml"),
    ("GET", r"/api/challenge/[^/]+/show", "challenges/api-challenge-id-show.yaml"),
    ("POST", r"/api/challenge/[^/]+/accept", "challenges/api-challenge-challengeId-accept.yaml"),
    ("POST", r"/api/challenge/[^/]+/decline",
     "challenges/api-challenge-challengeId-decline.yaml"),
    ("POST", r"/api/challenge/[^/]+/cancel", "challenges/api-challenge-challengeId-cancel.yaml"),
    ("POST", r"/api/challenge/[^/]+", "challenges/api-challenge-username.yaml"),
    ("GET", r"/api/bot/game/stream/[^/]+", "bot/api-bot-game-stream-gameId.yaml"),
    ("GET", r"/api/board/game/stream/[^/]+", "board/api-board-game-stream-gameId.yaml"),
    ("POST", r"/api/bot/game/[^/]+/move/[^/]+", "bot/api-bot-game-gameId-move-move.yaml"),
    ("POST", r"/api/board/game/[^/]+/move/[^/]+", "board/api-board-game-gameId-move-move.yaml"),
    ("*", r"/api/bot/game/[^/]+/chat", "bot/api-bot-game-gameId-chat.yaml"),
    ("*", r"/api/board/game/[^/]+/chat", "board/api-board-game-gameId-chat.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/abort", "bot/api-bot-game-gameId-abort.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/resign", "bot/api-bot-game-gameId-resign.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/draw/[^/]+",
     "bot/api-bot-game-gameId-draw-accept.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/takeback/[^/]+",
     "bot/api-bot-game-gameId-takeback-accept.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/claim-victory",
     "bot/api-bot-game-gameId-claim-victory.yaml"),
    ("POST", r"/api/(bot|board)/game/[^/]+/claim-draw",
     "bot/api-bot-game-gameId-claim-draw.yaml"),
    ("GET", r"/game/export/[^/]+", "games/game-export-gameId.yaml"),
    ("GET", r"/api/user/[^/]+", "users/api-user-username.yaml"),
    ("GET", r"/api/users/status", "users/api-users-status.yaml"),
    ("GET", r"/api/tournament/[^/]+", "arenatournaments/api-tournament-id.yaml"),
    ("POST", r"/api/tournament/[^/]+/join", "arenatournaments/api-tournament-id-join.yaml"),
    ("POST", r"/api/tournament/[^/]+/withdraw",
     "arenatournaments/api-tournament-id-withdraw.yaml"),
    ("POST", r"/api/round/[^/]+/add-time/[^/]+",
     "challenges/api-round-gameId-add-time-seconds.yaml"),
]


def _retrieve(uri: str) -> Resource[Any]:
    path = Path(uri.removeprefix("file://"))
    return Resource.from_contents(yaml.safe_load(path.read_text()),
                                  default_specification=DRAFT202012)


@cache
def _registry() -> Registry[Any]:
    return Registry(retrieve=_retrieve)  # type: ignore[call-arg]  # mypy misses the attrs alias


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@cache
def validator_for(ref: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": ref}, registry=_registry())


def schema_ref(file: str, pointer: str = "") -> str:
    return (SPEC_DIR / file).as_uri() + ("#/" + pointer if pointer else "")


def validate(obj: Any, ref: str) -> None:
    errors = sorted(validator_for(ref).iter_errors(obj), key=lambda e: list(e.path))
    if errors:
        details = "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
        raise AssertionError(f"{json.dumps(obj)[:400]} does not match {ref}: {details}")


def validate_schema(obj: Any, name: str) -> None:
    """Validate against one schema file, e.g. validate_schema(x, "GameStartEvent")."""
    validate(obj, schema_ref(f"schemas/{name}.yaml"))


def operation_file(method: str, path: str) -> str | None:
    for op_method, pattern, file in OPERATIONS:
        if op_method in ("*", method) and re.fullmatch(pattern, path):
            return file
    return None


def response_ref(method: str, path: str, status: int) -> str:
    """The spec schema of this reply, or Error.yaml for undocumented error statuses."""
    file = operation_file(method, path)
    if file is None:
        if status >= 400:
            return schema_ref("schemas/Error.yaml")
        raise AssertionError(f"no spec operation for {method} {path}")
    spec = yaml.safe_load((SPEC_DIR / "tags" / file).read_text())
    responses = spec.get(method.lower(), {}).get("responses", {})
    response = responses.get(str(status))
    if response is not None and "content" in response:
        for media, content in response["content"].items():
            if "schema" in content:
                return schema_ref(f"tags/{file}", _pointer(
                    method.lower(), "responses", str(status), "content", media, "schema"))
    if status >= 400:
        return schema_ref("schemas/Error.yaml")
    raise AssertionError(f"the spec documents no JSON for {method} {path} -> {status}")


@dataclass
class Reply:
    status: int
    content_type: str
    text: str
    headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.text)


class SpecClient:
    """An HTTP client for one token that validates everything it receives."""

    def __init__(self, base_url: str, token: str | None,
                 session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self.token = token
        self.session = session
        self.received: list[Any] = []

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        headers.update(extra or {})
        return headers

    def _check(self, method: str, path: str, status: int, content_type: str,
               text: str) -> None:
        if content_type == "application/json":
            body = json.loads(text)
            validate(body, response_ref(method, path.split("?")[0], status))
            self.received.append(body)

    async def request(self, method: str, path: str, *, data: Any = None,
                      json_body: Any = None, headers: dict[str, str] | None = None) -> Reply:
        async with self.session.request(method, self.base_url + path, data=data,
                                        json=json_body, headers=self._headers(headers)) as r:
            text = await r.text()
            self._check(method, path, r.status, r.content_type, text)
            if r.content_type == "application/x-ndjson":
                for line in text.splitlines():
                    if line.strip():
                        obj = json.loads(line)
                        validate(obj, response_ref(method, path.split("?")[0], r.status))
                        self.received.append(obj)
            return Reply(r.status, r.content_type, text, dict(r.headers))

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("POST", path, **kwargs)

    def stream(self, path: str, *, method: str = "GET", data: Any = None,
               headers: dict[str, str] | None = None) -> Stream:
        return Stream(self, method, path, data, headers)


class Stream:
    """An open ND-JSON stream whose lines are validated as they are read."""

    def __init__(self, client: SpecClient, method: str, path: str, data: Any,
                 headers: dict[str, str] | None) -> None:
        self.client = client
        self.method = method
        self.path = path
        self.data = data
        self.headers = headers
        self.status = 0
        self.response: aiohttp.ClientResponse | None = None
        self.error_body: Any = None

    async def __aenter__(self) -> Stream:
        client = self.client
        self.response = await client.session.request(
            self.method, client.base_url + self.path, data=self.data,
            headers=client._headers(self.headers))
        self.status = self.response.status
        if self.status != 200:
            text = await self.response.text()
            client._check(self.method, self.path, self.status, self.response.content_type, text)
            self.error_body = json.loads(text) if self.response.content_type.endswith(
                "json") else text
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.response is not None:
            self.response.close()

    async def next(self, timeout_s: float = GUARD_S) -> dict[str, Any]:
        """The next JSON line, skipping keep-alives; raises EOFError when the stream ends."""
        assert self.response is not None
        while True:
            raw = await asyncio.wait_for(self.response.content.readline(), timeout_s)
            if raw == b"":
                raise EOFError(f"{self.path}: stream ended")
            if raw.strip() == b"":
                continue
            obj: dict[str, Any] = json.loads(raw)
            if "done" not in obj:
                validate(obj, response_ref(self.method, self.path.split("?")[0], 200))
            self.client.received.append(obj)
            return obj

    async def until(self, kind: str, timeout_s: float = GUARD_S, **match: Any) -> dict[str, Any]:
        """Skip lines until one of type `kind` (whose fields match `match`) arrives."""
        async with asyncio.timeout(timeout_s):
            while True:
                obj = await self.next(timeout_s)
                if obj.get("type") == kind and all(obj.get(k) == v for k, v in match.items()):
                    return obj

    async def raw_line(self, timeout_s: float = GUARD_S) -> bytes:
        assert self.response is not None
        return await asyncio.wait_for(self.response.content.readline(), timeout_s)

    async def lines(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            try:
                yield await self.next()
            except EOFError:
                return
