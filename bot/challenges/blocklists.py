"""Online block lists: plain-text lists of user names at URLs, refreshed with caching headers.

Each list is fetched with the validators of the last answer (`If-None-Match` for an ETag,
`If-Modified-Since` for a Last-Modified date), so an unchanged list costs a 304 and no body.
The lists and their validators are kept in the state directory: after a restart the bot
declines the same users before its first fetch, and a list that cannot be fetched keeps its
last known names. The Lichess token is never sent to these URLs.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp

from bot.lichess.client import USER_AGENT
from bot.ops.statefile import load_state, save_state

log = logging.getLogger(__name__)

STATE_FILE: Final = "block_lists.json"
FETCH_TIMEOUT_S: Final = 15.0
MAX_LIST_BYTES: Final = 4_000_000  # a list larger than this is refused (about 200k names)
USERNAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,29}$")


def parse_names(text: str) -> frozenset[str]:
    """User names of a list, lower-case: one a line; blank lines, `#` comments and words
    that cannot be Lichess user names are skipped."""
    names = set()
    for line in text.splitlines():
        word = line.split("#", 1)[0].strip()
        if word and USERNAME.match(word):
            names.add(word.lower())
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class CachedList:
    """One list as last fetched, with its validators."""

    names: frozenset[str] = frozenset()
    etag: str | None = None
    last_modified: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {}
        if self.etag is not None:
            headers["If-None-Match"] = self.etag
        if self.last_modified is not None:
            headers["If-Modified-Since"] = self.last_modified
        return headers

    def to_json(self) -> dict[str, Any]:
        return {"names": sorted(self.names), "etag": self.etag,
                "last_modified": self.last_modified}

    @classmethod
    def from_json(cls, raw: object) -> CachedList:
        if not isinstance(raw, dict):
            return cls()
        names = raw.get("names")
        etag, modified = raw.get("etag"), raw.get("last_modified")
        return cls(
            frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list)
            else frozenset(),
            etag if isinstance(etag, str) else None,
            modified if isinstance(modified, str) else None,
        )


class BlockLists:
    """The configured lists, their union, and the task that keeps them fresh."""

    def __init__(self, urls: Iterable[str], state_dir: Path) -> None:
        self.urls = tuple(urls)
        self.path = state_dir / STATE_FILE
        stored = load_state(self.path)
        self.lists = {url: CachedList.from_json(stored.get(url)) for url in self.urls}
        self.fetches = 0  # full answers (200)
        self.not_modified = 0  # 304 answers
        self.names = self._union()

    def _union(self) -> frozenset[str]:
        return frozenset().union(*(cached.names for cached in self.lists.values()))

    async def refresh(self, session: aiohttp.ClientSession) -> None:
        """Fetch every list once; a list that fails keeps its last names."""
        for url in self.urls:
            try:
                await self._fetch(session, url)
            except (aiohttp.ClientError, TimeoutError, LookupError, ValueError) as exc:
                log.warning("block list %s not refreshed: %s: %s", url, type(exc).__name__, exc)
        self.names = self._union()
        save_state(self.path, {url: cached.to_json() for url, cached in self.lists.items()})

    async def _fetch(self, session: aiohttp.ClientSession, url: str) -> None:
        cached = self.lists[url]
        timeout = aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)
        async with session.get(url, headers=cached.headers(), timeout=timeout) as resp:
            if resp.status == 304:
                self.not_modified += 1
                return
            if resp.status != 200:
                raise ValueError(f"HTTP {resp.status}")
            body = await resp.content.read(MAX_LIST_BYTES + 1)
            if len(body) > MAX_LIST_BYTES:
                raise ValueError(f"larger than {MAX_LIST_BYTES} bytes")
            names = parse_names(body.decode(resp.charset or "utf-8"))
            self.lists[url] = CachedList(names, resp.headers.get("ETag"),
                                         resp.headers.get("Last-Modified"))
            self.fetches += 1
            log.info("block list %s: %d names", url, len(names))

    async def run(self, refresh_s: float) -> None:
        """Long-lived task: refresh every `refresh_s` seconds (nothing to do without URLs)."""
        if not self.urls:
            return
        async with aiohttp.ClientSession(headers={"User-Agent": USER_AGENT}) as session:
            while True:
                await self.refresh(session)
                await asyncio.sleep(refresh_s)
