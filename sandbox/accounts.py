"""Sandbox accounts: usernames, titles, scopes, ratings and bearer tokens."""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from sandbox.errors import ApiError

# OAuth scopes the sandbox knows about (spec: components.securitySchemes.OAuth2).
BOT_PLAY = "bot:play"
BOARD_PLAY = "board:play"
CHALLENGE_READ = "challenge:read"
CHALLENGE_WRITE = "challenge:write"
TOURNAMENT_WRITE = "tournament:write"
KNOWN_SCOPES = frozenset({BOT_PLAY, BOARD_PLAY, CHALLENGE_READ, CHALLENGE_WRITE,
                          TOURNAMENT_WRITE})

# A bot's token carries exactly what the README asks an owner for: bot:play alone.
DEFAULT_BOT_SCOPES = (BOT_PLAY,)
DEFAULT_HUMAN_SCOPES = (BOARD_PLAY, CHALLENGE_READ, CHALLENGE_WRITE)

INITIAL_RATING = 1500
INITIAL_RD = 350
# A seeded rating (a sandbox person "of 1,600") is an established one: enough games that lila
# shows it without `provisional` (12 or more), with a settled deviation.
ESTABLISHED_GAMES = 100
ESTABLISHED_RD = 60
# lila's rating floor and ceiling (modules/rating Glicko.minRating / maxRating).
MIN_RATING = 400
MAX_RATING = 4000
TOKEN_LENGTH = 24
# Lichess usernames: 2-20 characters, letters, digits, '_' and '-'.
USERNAME_ALPHABET = frozenset(string.ascii_letters + string.digits + "_-")
PERF_KEYS = ("ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence", "chess960")

NOT_A_BOT = (
    "This endpoint can only be used with a Bot account. "
    "See https://lichess.org/api#operation/botAccountUpgrade"
)
A_BOT = "This endpoint cannot be used with a Bot account."


@dataclass
class PerfRating:
    """One perf's rating, as in the profile's `perfs` map."""

    rating: int = INITIAL_RATING
    games: int = 0
    rd: int = INITIAL_RD
    prog: int = 0


@dataclass
class Account:
    """A sandbox user: a human or a BOT, identified by one bearer token."""

    username: str
    token: str
    bot: bool
    scopes: frozenset[str]
    created_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    seen_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    perfs: dict[str, PerfRating] = field(default_factory=dict)
    games_played: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    # A player who is not logged in (lila Challenger.Anonymous): shown as `null` challenger
    # and as a player with no id or name. The sandbox still gives it a token to play with.
    anonymous: bool = False

    @property
    def id(self) -> str:
        return self.username.lower()

    @property
    def title(self) -> str | None:
        return "BOT" if self.bot else None

    def set_rating(self, rating: int) -> None:
        """An established rating of `rating` in every perf."""
        self.perfs = {key: PerfRating(rating, ESTABLISHED_GAMES, ESTABLISHED_RD)
                      for key in PERF_KEYS}

    def perf(self, key: str) -> PerfRating:
        return self.perfs.setdefault(key, PerfRating())

    def rating(self, perf_key: str) -> int:
        return self.perf(perf_key).rating

    def provisional(self, perf_key: str) -> bool:
        return self.perf(perf_key).games < 12

    def require_scope(self, *accepted: str) -> None:
        """Raise 403 unless the token holds one of the accepted scopes."""
        if accepted and not self.scopes.intersection(accepted):
            raise ApiError(403, f"Missing scope: {' or '.join(accepted)}")

    def require_bot(self) -> None:
        if not self.bot:
            raise ApiError(400, NOT_A_BOT)

    def require_not_bot(self) -> None:
        if self.bot:
            raise ApiError(400, A_BOT)


class AccountBook:
    """All accounts, looked up by token or by (case-insensitive) username."""

    def __init__(self) -> None:
        self._by_token: dict[str, Account] = {}
        self._by_id: dict[str, Account] = {}

    def add(
        self,
        username: str,
        *,
        bot: bool,
        scopes: Iterable[str] | None = None,
        token: str | None = None,
        rating: int | None = None,
    ) -> Account:
        if not 2 <= len(username) <= 20 or not set(username) <= USERNAME_ALPHABET:
            raise ValueError(
                f"invalid username {username!r}: use 2-20 letters, digits, '_' or '-'"
            )
        if username.lower() in self._by_id:
            raise ValueError(f"username {username!r} is already taken")
        chosen = frozenset(scopes if scopes is not None else
                           (DEFAULT_BOT_SCOPES if bot else DEFAULT_HUMAN_SCOPES))
        unknown = chosen - KNOWN_SCOPES
        if unknown:
            raise ValueError(
                f"unknown scopes {sorted(unknown)}; known: {sorted(KNOWN_SCOPES)}"
            )
        if token is None:
            token = "lip_" + secrets.token_urlsafe(TOKEN_LENGTH).replace("-", "_")
        elif not token or not all(c.isalnum() or c == "_" for c in token):
            raise ValueError("a token may hold only letters, digits and '_'")
        if token in self._by_token:
            raise ValueError("token already in use")
        account = Account(username=username, token=token, bot=bot, scopes=chosen)
        if rating is not None:
            if not MIN_RATING <= rating <= MAX_RATING:
                raise ValueError(f"rating {rating}: use {MIN_RATING}-{MAX_RATING}")
            account.set_rating(rating)
        self._by_token[token] = account
        self._by_id[account.id] = account
        return account

    def by_token(self, token: str) -> Account | None:
        return self._by_token.get(token)

    def by_name(self, username: str) -> Account | None:
        return self._by_id.get(username.lower())

    def all(self) -> list[Account]:
        return list(self._by_id.values())

    def authenticate(self, authorization: str | None) -> Account:
        """Resolve an Authorization header to its account, or raise 401."""
        if not authorization:
            raise ApiError(401, "Missing authorization header")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "Invalid authorization header: expected 'Bearer <token>'")
        account = self._by_token.get(token.strip())
        if account is None:
            raise ApiError(401, "No such token")
        account.seen_at_ms = int(time.time() * 1000)
        return account
