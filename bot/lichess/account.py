"""Is this token fit to play: the account behind a token, read one way, judged by one rule.

The answers of `POST /api/token/test` (the token's scopes) and `GET /api/account` (the
user and its title) are read here (`account_info`), and `play_problems` alone decides
whether the token may play: it must carry bot:play and belong to a BOT account.

Two ways to ask: the command line's one-shot calls (`fetch_account`, `upgrade_to_bot`) run
before or instead of the bot's event loop, so they use berserk's blocking client, every
request with a timeout; the running bot asks through its own client (`read_account`).
Every failure becomes an `AccountError` whose message says what to do (never showing the
token).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import berserk
import requests

from bot.lichess.client import AuthError, Lichess, LichessError, RequestError, Unavailable

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
    user_id: str  # lower-case
    username: str
    scopes: tuple[str, ...] | None  # None: the server cannot say (no /api/token/test)
    is_bot: bool

    @property
    def can_play(self) -> bool:
        return not play_problems(self)


def play_problems(info: AccountInfo) -> list[str]:
    """Why this token may not play through the Bot API, each with what to do; none: it may."""
    problems = []
    if info.scopes is not None and BOT_SCOPE not in info.scopes:
        problems.append(f"the token lacks the {BOT_SCOPE} scope (it has: "
                        f"{', '.join(sorted(info.scopes)) or 'none'}); create a token with "
                        f"{BOT_SCOPE} at /account/oauth/token")
    if not info.is_bot:
        problems.append(f"{info.username} is not a BOT account: only BOT accounts can play "
                        "through the Bot API; run `kibitz upgrade` first (irreversible, "
                        "only for an account with no games)")
    return problems


def account_info(url: str, token: str, tested: Mapping[str, Any] | None,
                 account: Mapping[str, Any]) -> AccountInfo:
    """The answers of POST /api/token/test (None: the server lacks it) and GET /api/account."""
    scopes: tuple[str, ...] | None = None
    if tested is not None:
        entry = tested.get(token)
        if not entry:
            raise AccountError(f"{url} rejected the token: it is not valid (expired or "
                               "revoked?)")
        if not isinstance(entry, Mapping):
            raise AccountError(f"{url}: /api/token/test sent an unexpected entry for the token",
                               unreachable=True)
        scopes = tuple(s.strip() for s in str(entry.get("scopes") or "").split(",")
                       if s.strip())
    name = str(account.get("username") or account.get("id") or "")
    if not name:
        raise AccountError(f"{url}: /api/account returned no user name", unreachable=True)
    return AccountInfo(user_id=str(account.get("id") or name).lower(), username=name,
                       scopes=scopes, is_bot=account.get("title") == "BOT")


async def read_account(client: Lichess, token: str) -> AccountInfo:
    """The running bot's check, through its own client: AuthError when the server rejects
    the token, AccountError when it cannot be asked or answers nonsense."""
    try:
        tested = await client.token_test()
        account = await client.account()
    except AuthError:
        raise
    except (Unavailable, RequestError, LichessError) as exc:
        raise AccountError(f"cannot check the account: {exc}", unreachable=True) from exc
    return account_info(client.base_url, token, tested, account)


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
    """The command line's check, through berserk: the token's scopes and the account."""
    client = _client(url, token)
    try:
        tested = client.oauth.test_tokens(token)
        account = client.account.get()
    except Exception as error:
        raise _explain(error, url) from None
    if not isinstance(tested, Mapping) or not isinstance(account, Mapping):
        raise AccountError(f"unexpected answer from {url}: not an object")
    return account_info(url, token, tested, account)


def describe(info: AccountInfo) -> list[str]:
    """What the check found, and what to do about each problem."""
    scopes = "unknown" if info.scopes is None else ", ".join(info.scopes) or "none"
    return [f"account: {info.username} "
            f"({'BOT account' if info.is_bot else 'not a BOT account'})",
            f"scopes: {scopes}",
            *(f"problem: {problem}" for problem in play_problems(info))]


def upgrade_to_bot(url: str, token: str) -> None:
    """POST /api/bot/account/upgrade: irreversible; the account must have played no game."""
    try:
        _client(url, token).account.upgrade_to_bot()
    except Exception as error:
        raise _explain(error, url) from None
