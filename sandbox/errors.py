"""API errors and their JSON bodies, shaped as lila sends them."""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web


class ApiError(Exception):
    """An error reply: an HTTP status and an `{"error": ...}` body (plus extra keys)."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **self.extra}

    def response(self) -> web.Response:
        return json_response(self.body(), status=self.status)


def form_error(field: str, message: str) -> ApiError:
    """A 400 for one bad form field.

    lila sends `{"<field>": [msg], "error": {"<field>": [msg]}}`; the spec's Error schema
    wants a string under `error`, so the sandbox keeps the per-field list and puts a
    readable sentence under `error`.
    """
    return ApiError(400, f"{field}: {message}", **{field: [message]})


def not_found(message: str = "Not found") -> ApiError:
    return ApiError(404, message)


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(body, separators=(",", ":")),
        status=status,
        content_type="application/json",
    )


def ok() -> web.Response:
    return json_response({"ok": True})


class RateLimited(ApiError):
    """A limiter refused the request: lila's `Limited` body with the key and the wait."""

    def __init__(self, message: str, key: str | None, wait_s: float, status: int = 429) -> None:
        extra = {} if key is None else {"ratelimit": {"key": key, "seconds": math.ceil(wait_s)}}
        super().__init__(status, message, **extra)
        self.wait_s = wait_s
