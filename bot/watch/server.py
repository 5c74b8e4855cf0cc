"""The status page's HTTP server: aiohttp on the bot's own loop.

Routes: `/` the page (one HTML file, its script and style sheet, all served from here: no
CDN, no web font), `/events` the live feed (server-sent events), `/metrics` (Prometheus),
`/healthz` (200 while the event stream is open and the loop turns, 503 otherwise; no
password, and it says nothing a stranger could use).

It listens on loopback unless told otherwise; beyond loopback it needs a password (HTTP
Basic, any user name; from KIBITZ_WATCH_PASSWORD, watch.password, or a container's secret
/run/secrets/watch-password), or the bot refuses to start. The API token is never in any reply.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import hmac
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.game.hooks import GameContext, GameHooks
from bot.lichess.client import EVENT_STREAM_KIND
from bot.lichess.events import GameFull
from bot.ops.config import WatchConfig
from bot.ops.secrets import CONTAINER_SECRETS_DIR, container_secret
from bot.watch import proctree
from bot.watch.feed import EvalRecorder, Feed, WatchedBot
from bot.watch.prometheus import registry_for
from bot.watch.warnings import WarningRing

log = logging.getLogger(__name__)

PASSWORD_ENV: Final = "KIBITZ_WATCH_PASSWORD"
PASSWORD_SECRET: Final = "watch-password"  # a container's secret: /run/secrets/watch-password
REALM: Final = "kibitz"
TICK_S: Final = 1.0  # the loop's heartbeat for /healthz
LOOP_STALL_S: Final = 5.0  # no heartbeat for this long: the loop is stuck (/healthz 503)
SSE_PING_S: Final = 15.0  # a comment line this often keeps proxies from closing the feed
STATIC: Final = {  # file -> content type
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# The page runs only its own script, shows only its own images (the boards are data: URLs)
# and can be framed by no one.
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class WatchError(Exception):
    """The page cannot be served as configured (a person must fix the configuration)."""


@dataclass(frozen=True)
class WatchSettings:
    host: str
    port: int
    password: str | None

    @classmethod
    def resolve(cls, config: WatchConfig, environ: Mapping[str, str],
                secrets_dir: Path = CONTAINER_SECRETS_DIR) -> WatchSettings:
        """The settings, or WatchError when the page would be open beyond loopback."""
        password = environ.get(PASSWORD_ENV) or config.password \
            or _secret_password(secrets_dir) or None
        if password is None and not is_loopback(config.host):
            raise WatchError(
                f"watch.host is {config.host!r}, beyond loopback: set watch.password (or "
                f"{PASSWORD_ENV}, or in a container the secret "
                f"{secrets_dir / PASSWORD_SECRET}) so that strangers cannot see the page, or "
                "bind to 127.0.0.1 and open it over an SSH tunnel")
        return cls(config.host, config.port, password)


def _secret_password(secrets_dir: Path) -> str | None:
    """The password in the container secret, if there is one (its first line, stripped)."""
    path = container_secret(PASSWORD_SECRET, secrets_dir)
    if path is None:
        return None
    try:
        lines = path.read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise WatchError(f"the secret {path} cannot be read: {error}") from None
    if not lines or not lines[0].strip():
        raise WatchError(f"the secret {path} is empty: put the status page's password in it")
    return lines[0].strip()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name (or "" / "0.0.0.0" style wildcard): assume it is reachable


def authorized(header: str | None, password: str) -> bool:
    """HTTP Basic with any user name and this password (compared in constant time)."""
    if header is None or not header.startswith("Basic "):
        return False
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    _user, colon, given = decoded.partition(":")
    return bool(colon) and hmac.compare_digest(given.encode(), password.encode())


def static_file(name: str) -> bytes:
    return resources.files("bot.watch").joinpath("static", name).read_bytes()


class Watch:
    """The page, /metrics and /healthz of one bot, from `start` to `close`."""

    def __init__(self, settings: WatchSettings, *, base_url: str, token: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.ring = WarningRing([token])
        self._clock = clock
        self._base_url = base_url
        self.feed: Feed | None = None
        self.port: int | None = None  # the port bound (settings.port 0: one the OS chose)
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._last_tick_s = clock()
        self._bot: WatchedBot | None = None
        self._files = {name: static_file(name) for name in STATIC}
        self.evals: dict[str, dict[int, int]] = {}  # game id -> ply -> centipawns (White)

    def hooks(self, hooks: GameHooks) -> GameHooks:
        """The games' hooks with the evaluation recorder added (the eval graphs)."""
        return dataclasses.replace(hooks, observers=(*hooks.observers, self._observer))

    def _observer(self, full: GameFull, context: GameContext) -> EvalRecorder:
        feed = self.feed
        return EvalRecorder(self.evals.setdefault(context.game_id, {}),
                            on_finished=(lambda: feed.capture(context.game_id))
                            if feed is not None else lambda: None)

    def attach(self, bot: WatchedBot) -> Feed:
        """The feed of this bot."""
        self._bot = bot
        self.feed = Feed(bot, self.ring, base_url=self._base_url, clock=self._clock,
                         evals=self.evals)
        return self.feed

    async def start(self) -> None:
        """Listen; a port in use is logged and the bot plays on without the page."""
        assert self.feed is not None and self._bot is not None, "attach a bot first"
        feed = self.feed
        registry = registry_for(self._bot, uptime_s=lambda: self._clock() - feed.started_s,
                                memory=proctree.tree_pss_bytes)
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._file_handler("index.html"))
        for name in STATIC:
            app.router.add_get(f"/{name}", self._file_handler(name))
        app.router.add_get("/events", self._events)
        app.router.add_get("/healthz", self._healthz)

        async def metrics(request: web.Request) -> web.Response:
            body = generate_latest(registry)  # on the loop: it reads the bot's live state
            return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

        app.router.add_get("/metrics", metrics)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.settings.host, self.settings.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            log.warning("status page: cannot listen on %s:%d (%s); the bot plays on without "
                        "it", self.settings.host, self.settings.port, exc.strerror or exc)
            return
        self._runner = runner
        self.port = int(runner.addresses[0][1]) if runner.addresses else self.settings.port
        logging.getLogger().addHandler(self.ring)
        self._tasks = [asyncio.create_task(feed.run(), name="status page feed"),
                       asyncio.create_task(self._tick(), name="status page heartbeat")]
        log.info("status page on http://%s:%d/%s", self.settings.host, self.port,
                 " (password required)" if self.settings.password else "")

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        logging.getLogger().removeHandler(self.ring)
        if self.feed is not None:
            self.feed.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- handlers ------------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        password = self.settings.password
        if password is not None and request.path != "/healthz" \
                and not authorized(request.headers.get("Authorization"), password):
            return web.Response(status=401, text="a password is needed\n",
                                headers={"WWW-Authenticate": f'Basic realm="{REALM}"'})
        response = await handler(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    def _file_handler(self, name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=self._files[name],
                                headers={"Content-Type": STATIC[name]})
        return handler

    async def _events(self, request: web.Request) -> web.StreamResponse:
        assert self.feed is not None
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "X-Accel-Buffering": "no",
                                               **SECURITY_HEADERS})
        await response.prepare(request)
        page = self.feed.subscribe()
        try:
            while True:
                try:
                    async with asyncio.timeout(SSE_PING_S):
                        message = await page.get()
                except TimeoutError:
                    message = ": ping\n\n"
                if message is None:
                    break
                await response.write(message.encode())
        except (ConnectionResetError, ConnectionError):
            pass  # the page was closed
        finally:
            self.feed.unsubscribe(page)
        return response

    async def _tick(self) -> None:
        while True:
            self._last_tick_s = self._clock()
            await asyncio.sleep(TICK_S)

    def healthy(self) -> tuple[bool, str]:
        assert self._bot is not None
        if EVENT_STREAM_KIND not in self._bot.client.open_streams:
            return False, "the event stream is not connected"
        stalled_s = self._clock() - self._last_tick_s
        if stalled_s > LOOP_STALL_S:
            return False, f"the event loop has not turned for {stalled_s:.0f} s"
        return True, "ok"

    async def _healthz(self, request: web.Request) -> web.Response:
        ok, why = self.healthy()
        return web.Response(status=200 if ok else 503, text=why + "\n")
