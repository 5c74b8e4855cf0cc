"""One-shot account calls for the command line: test a token, upgrade to a BOT account.

These run before (or instead of) the bot's event loop, so they use berserk's
blocking client; every request has a timeout, and every failure becomes an
`AccountError` whose message says what to do (never showing the token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import berserk
import requests

# Seconds before a one-shot request is given up.
REQUEST_TIMEOUT_S = 15.0
BOT_SCOPE = "bot:play"


class AccountError(Exception):
    """The account or token cannot be used; `unreachable` if the server could not be asked."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class _TimeoutSession(berserk.TokenSession):  # type: ignore[misc]
    """berserk's token session, with a timeout on every request."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", REQUEST_TIMEOUT_S)
        return super().request(*args, **kwargs)


@dataclass(frozen=True)
class AccountInfo:
    user_id: str
    username: str
    scopes: tuple[str, ...]
    is_bot: bool

    @property
    def can_play(self) -> bool:
        return self.is_bot and BOT_SCOPE in self.scopes


def _client(url: str, token: str) -> Any:
    return berserk.Client(session=_TimeoutSession(token), base_url=url)


def _explain(error: Exception, url: str) -> AccountError:
    if isinstance(error, berserk.exceptions.ResponseError):
        status = error.status_code
        if status == 401:
            return AccountError(f"{url} rejected the token (401): it is wrong, expired or "
                                "revoked; create a new one")
        if status == 403:
            return AccountError(f"{url} refused the request (403): the token lacks a scope")
        cause = error.cause.get("error") if isinstance(error.cause, dict) else None
        return AccountError(f"{url} answered {status}: {cause or error.reason}",
                            unreachable=status >= 500 or status == 429)
    if isinstance(error, requests.RequestException | berserk.exceptions.ApiError):
        return AccountError(f"cannot reach {url}: {error}", unreachable=True)
    return AccountError(f"unexpected answer from {url}: {error!r}")


def fetch_account(url: str, token: str) -> AccountInfo:
    """The token's user and scopes (POST /api/token/test) and the account (GET /api/account)."""
    client = _client(url, token)
    try:
        tested = client.oauth.test_tokens(token)
        account = client.account.get()
    except Exception as error:
        raise _explain(error, url) from None
    info = tested.get(token) if isinstance(tested, dict) else None
    if not info:
        raise AccountError(f"{url} says the token is not valid (expired or revoked?)")
    scopes = tuple(s for s in str(info.get("scopes") or "").split(",") if s)
    return AccountInfo(user_id=str(info.get("userId", account.get("id", ""))),
                       username=str(account.get("username", account.get("id", "?"))),
                       scopes=scopes, is_bot=account.get("title") == "BOT")


def describe(info: AccountInfo) -> list[str]:
    """What the check found, and what to do about each problem."""
    lines = [f"account: {info.username} ({'BOT account' if info.is_bot else 'not a BOT account'})",
             f"scopes: {', '.join(info.scopes) or 'none'}"]
    if BOT_SCOPE not in info.scopes:
        lines.append(f"problem: the token lacks the {BOT_SCOPE} scope; create a token with it")
    if not info.is_bot:
        lines.append("problem: only BOT accounts can play through the Bot API; "
                     "run `kibitz upgrade` (irreversible)")
    return lines


def upgrade_to_bot(url: str, token: str) -> None:
    """POST /api/bot/account/upgrade: irreversible; the account must have played no game."""
    try:
        _client(url, token).account.upgrade_to_bot()
    except Exception as error:
        raise _explain(error, url) from None
