"""ND-JSON streams: subscribers, keep-alives, and who is listening to what."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"
KEEPALIVE = b"\n"
# How often an idle stream checks whether its client has gone, in seconds.
POLL_S = 0.25

Event = dict[str, Any]


class Subscriber:
    """One open ND-JSON stream: a queue of lines and the faults acting on it."""

    def __init__(self, kind: str, account_id: str, key: str = "", user_agent: str = "") -> None:
        self.kind = kind  # "event", "game" or "challenge"
        self.account_id = account_id
        self.key = key  # the game or challenge id, if any
        self.user_agent = user_agent
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.closed = False
        self.mute_keepalives = False
        self.mute_events = False
        self.dropped = False
        self.missed_keepalives = 0  # muted by a fault: how long the client bore the silence

    def send(self, event: Event) -> None:
        if not self.closed:
            self.queue.put_nowait(event)

    def close(self) -> None:
        """Ask the stream to end after the lines already queued."""
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)

    def drop(self) -> None:
        """Fault: cut the connection without ending the response properly."""
        self.dropped = True
        self.close()

    def silence(self, keep_events: bool = False) -> None:
        """Fault: stop sending keep-alives (and events, unless keep_events)."""
        self.mute_keepalives = True
        self.mute_events = not keep_events


def encode(event: Event) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


async def serve(
    request: web.Request,
    subscriber: Subscriber,
    keepalive_s: float,
    first: Iterable[Event] = (),
    on_close: Callable[[], None] | None = None,
) -> web.StreamResponse:
    """Stream a subscriber's lines with keep-alives until it closes or the client leaves."""
    response = web.StreamResponse(status=200, headers={"Content-Type": NDJSON})
    try:
        await response.prepare(request)
        for line in first:
            await response.write(encode(line))
        last_write_s = time.monotonic()
        while True:
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            wait_s = min(POLL_S, max(keepalive_s - (time.monotonic() - last_write_s), 0.0))
            try:
                event: Event | None = await asyncio.wait_for(
                    subscriber.queue.get(), timeout=wait_s)
            except TimeoutError:
                if time.monotonic() - last_write_s >= keepalive_s:
                    if subscriber.mute_keepalives:
                        subscriber.missed_keepalives += 1
                    else:
                        await response.write(KEEPALIVE)
                    last_write_s = time.monotonic()
                continue
            if event is None:
                if subscriber.dropped and request.transport is not None:
                    request.transport.close()
                    raise ConnectionResetError("stream dropped by fault injection")
                break
            if subscriber.mute_events:
                continue
            await response.write(encode(event))
            last_write_s = time.monotonic()
    except (ConnectionResetError, ConnectionError, asyncio.CancelledError) as exc:
        log.debug("%s stream of %s ended: %r", subscriber.kind, subscriber.account_id, exc)
        if isinstance(exc, asyncio.CancelledError):
            raise
    finally:
        subscriber.closed = True
        if on_close is not None:
            on_close()
    return response


class Hub:
    """Every open stream, by account and by game."""

    def __init__(self) -> None:
        self.event_streams: dict[str, Subscriber] = {}
        self.game_streams: dict[str, list[Subscriber]] = {}
        self.other_streams: list[Subscriber] = []

    def open_event_stream(self, account_id: str) -> Subscriber:
        """A new event stream closes the account's previous one, as lila does."""
        old = self.event_streams.get(account_id)
        if old is not None:
            old.close()
        subscriber = Subscriber("event", account_id)
        self.event_streams[account_id] = subscriber
        return subscriber

    def close_event_stream(self, subscriber: Subscriber) -> None:
        if self.event_streams.get(subscriber.account_id) is subscriber:
            del self.event_streams[subscriber.account_id]

    def send_event(self, account_id: str, event: Event) -> None:
        subscriber = self.event_streams.get(account_id)
        if subscriber is not None:
            subscriber.send(event)

    def online(self) -> frozenset[str]:
        return frozenset(self.event_streams)

    def open_game_stream(self, game_id: str, account_id: str, user_agent: str) -> Subscriber:
        """A new stream of the same game, account and User-Agent closes the older one."""
        streams = self.game_streams.setdefault(game_id, [])
        for old in streams:
            if old.account_id == account_id and old.user_agent == user_agent:
                old.close()
        subscriber = Subscriber("game", account_id, game_id, user_agent)
        streams.append(subscriber)
        return subscriber

    def close_game_stream(self, subscriber: Subscriber) -> None:
        streams = self.game_streams.get(subscriber.key, [])
        if subscriber in streams:
            streams.remove(subscriber)
        if not streams:
            self.game_streams.pop(subscriber.key, None)

    def watching(self, game_id: str, account_id: str) -> bool:
        return any(s.account_id == account_id and not s.closed
                   for s in self.game_streams.get(game_id, []))

    def send_game(self, game_id: str, build: Callable[[Subscriber], Event | None]) -> None:
        for subscriber in list(self.game_streams.get(game_id, [])):
            event = build(subscriber)
            if event is not None:
                subscriber.send(event)

    def close_game(self, game_id: str) -> None:
        for subscriber in list(self.game_streams.get(game_id, [])):
            subscriber.close()

    def all_streams(self) -> list[Subscriber]:
        streams = list(self.event_streams.values()) + self.other_streams
        for game_streams in self.game_streams.values():
            streams.extend(game_streams)
        return [s for s in streams if not s.closed]

    def select(self, kind: str | None = None, account_id: str | None = None) -> list[Subscriber]:
        return [s for s in self.all_streams()
                if (kind is None or s.kind == kind)
                and (account_id is None or s.account_id == account_id)]
