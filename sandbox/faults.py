"""Fault injection: 5xx replies, slow replies, 429s, dropped and silent streams.

Faults on requests match a path glob (fnmatch, e.g. "/api/bot/game/*/move/*"), optionally a
method and a username, and fire `count` times (None: until cleared). Faults on streams act
on the streams open at that moment. `parse_fault` reads the command-line form:

    status=503,path=/api/stream/event,count=2
    delay=1.5,path=/api/bot/*
    ratelimit=html,path=/api/bot/game/*/move/*,count=1     (ratelimit=json|html)
    reset=1,path=/api/bot/game/*/chat,count=3    (the connection dropped, no answer)
    drop=event,every=30          (drop event|game|challenge|all streams every 30 s)
    silent=game,every=45         (silence streams: no keep-alives, no events)
"""

from __future__ import annotations

import asyncio
import fnmatch
from dataclasses import dataclass, field

from aiohttp import web

from sandbox.errors import RateLimited
from sandbox.ratelimit import GENERIC_LIMIT

REQUEST_FAULTS = ("status", "delay", "ratelimit", "reset")
STREAM_FAULTS = ("drop", "silent")
STREAM_KINDS = ("event", "game", "challenge", "all")


@dataclass
class RequestFault:
    """One fault on matching requests."""

    kind: str  # "status", "delay", "ratelimit" or "reset"
    path: str = "*"
    method: str | None = None
    username: str | None = None
    count: int | None = None
    status: int = 500
    delay_s: float = 0.0
    html: bool = False
    fired: int = 0
    # Fires until the server's clock reaches this (an outage of a given length, on the
    # sandbox's clock, so a test can make it last 45 s without waiting 45 s).
    until_s: float | None = None

    def matches(self, method: str, path: str, username: str | None,
                now_s: float | None = None) -> bool:
        if self.count is not None and self.fired >= self.count:
            return False
        if self.until_s is not None and now_s is not None and now_s >= self.until_s:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        if self.username is not None and (username or "").lower() != self.username.lower():
            return False
        return fnmatch.fnmatchcase(path, self.path)


@dataclass(frozen=True)
class StreamFault:
    """A fault repeated on open streams every `every_s` seconds (command line)."""

    kind: str  # "drop" or "silent"
    streams: str = "all"
    every_s: float = 30.0


@dataclass
class FaultPlan:
    request_faults: list[RequestFault] = field(default_factory=list)

    def add(self, fault: RequestFault) -> RequestFault:
        self.request_faults.append(fault)
        return fault

    def clear(self) -> None:
        self.request_faults.clear()

    def take(self, method: str, path: str, username: str | None,
             now_s: float | None = None) -> list[RequestFault]:
        """The faults that fire on this request (each counted once) at `now_s`."""
        fired = []
        for fault in self.request_faults:
            if fault.matches(method, path, username, now_s):
                fault.fired += 1
                fired.append(fault)
        return fired


async def apply(faults: list[RequestFault],
                request: web.Request | None = None) -> web.Response | None:
    """Delay, then answer with an injected error if any fault says so; a reset closes the
    connection with no answer at all."""
    for fault in faults:
        if fault.kind == "delay":
            await asyncio.sleep(fault.delay_s)
    for fault in faults:
        if fault.kind == "reset" and request is not None and request.transport is not None:
            request.transport.close()
            # Nothing reaches the client: the write of this reply finds the socket closed.
            return web.Response(status=500)
        if fault.kind == "status":
            return web.json_response({"error": f"Injected fault: HTTP {fault.status}"},
                                     status=fault.status)
        if fault.kind == "ratelimit":
            raise RateLimitedFault(GENERIC_LIMIT, None, 60.0, html=fault.html)
    return None


class RateLimitedFault(RateLimited):
    """An injected 429; `html` picks the body format regardless of the server setting."""

    def __init__(self, message: str, key: str | None, wait_s: float, html: bool) -> None:
        super().__init__(message, key, wait_s)
        self.html = html


def parse_fault(spec: str) -> RequestFault | StreamFault:
    """Parse one `--fault` argument; raise ValueError naming what is wrong."""
    fields: dict[str, str] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"fault {spec!r}: expected key=value pairs separated by commas")
        fields[key.strip()] = value.strip()
    kinds = [k for k in (*REQUEST_FAULTS, *STREAM_FAULTS) if k in fields]
    if len(kinds) != 1:
        raise ValueError(
            f"fault {spec!r}: give exactly one of "
            f"{', '.join(REQUEST_FAULTS + STREAM_FAULTS)}")
    kind = kinds[0]
    allowed = {kind, "path", "method", "user", "count"} if kind in REQUEST_FAULTS else {
        kind, "every"}
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError(f"fault {spec!r}: unknown keys {sorted(unknown)}; "
                         f"allowed with {kind}: {sorted(allowed)}")
    try:
        if kind in STREAM_FAULTS:
            streams = fields[kind] or "all"
            if streams not in STREAM_KINDS:
                raise ValueError(f"{kind} must be one of {', '.join(STREAM_KINDS)}")
            every_s = float(fields.get("every", "30"))
            if every_s <= 0:
                raise ValueError("every must be positive")
            return StreamFault(kind, streams, every_s)
        fault = RequestFault(kind, path=fields.get("path", "*"), method=fields.get("method"),
                             username=fields.get("user"))
        if "count" in fields:
            fault.count = int(fields["count"])
        if kind == "status":
            fault.status = int(fields["status"])
            if not 400 <= fault.status <= 599:
                raise ValueError("status must be an HTTP error code (400-599)")
        elif kind == "reset":
            pass
        elif kind == "delay":
            fault.delay_s = float(fields["delay"])
            if fault.delay_s < 0:
                raise ValueError("delay must not be negative")
        else:
            if fields["ratelimit"] not in ("json", "html"):
                raise ValueError("ratelimit must be json or html")
            fault.html = fields["ratelimit"] == "html"
        return fault
    except ValueError as exc:
        raise ValueError(f"fault {spec!r}: {exc}") from None
