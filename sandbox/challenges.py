"""Challenges: the create form, its validation, decline reasons and ChallengeJson."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import chess

from sandbox.accounts import Account
from sandbox.errors import ApiError, form_error
from sandbox.games import GAME_ID_LENGTH, new_id
from sandbox.timecontrol import (
    CLOCK_LIMITS_S,
    CORRESPONDENCE_DAYS,
    MAX_INCREMENT_S,
    PERF_ICONS,
    PERF_NAMES,
    VARIANTS,
    TimeControl,
    perf_key,
    variant_json,
)

# English decline texts (lila translation/source/challenge.xml), by the key one sends.
DECLINE_REASONS = {
    "generic": "I'm not accepting challenges at the moment.",
    "later": "This is not the right time for me, please ask again later.",
    "tooFast": "This time control is too fast for me, please challenge again with a slower game.",
    "tooSlow": "This time control is too slow for me, please challenge again with a faster game.",
    "timeControl": "I'm not accepting challenges with this time control.",
    "rated": "Please send me a rated challenge instead.",
    "casual": "Please send me a casual challenge instead.",
    "standard": "I'm not accepting variant challenges right now.",
    "variant": "I'm not willing to play this variant right now.",
    "noBot": "I'm not accepting challenges from bots.",
    "onlyBot": "I'm only accepting challenges from bots.",
}
CHESS960_POSITIONS = 960
RULES = frozenset({"noAbort", "noRematch", "noGiveTime", "noClaimWin", "noEarlyDraw"})
COLORS = frozenset({"white", "black", "random"})
TRUE_WORDS = frozenset({"true", "1", "on", "yes"})
FALSE_WORDS = frozenset({"false", "0", "off", "no", ""})


def decline_reason(sent: str | None) -> tuple[str, str]:
    """(lowercase key, English text) for a sent reason; unknown keys become generic."""
    wanted = (sent or "generic").strip().lower()
    for key, text in DECLINE_REASONS.items():
        if key.lower() == wanted:
            return key.lower(), text
    return "generic", DECLINE_REASONS["generic"]


def parse_bool(form: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = form.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise form_error(name, "Invalid value: expected true or false")


def _parse_int(form: Mapping[str, str], name: str) -> int | None:
    raw = form.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise form_error(name, "Invalid value: expected an integer") from None


@dataclass(frozen=True)
class ChallengeRequest:
    """A validated challenge form."""

    rated: bool
    time_control: TimeControl
    color: str
    variant: str
    fen: str | None
    keep_alive_stream: bool
    rules: frozenset[str]

    @classmethod
    def parse(cls, form: Mapping[str, str]) -> ChallengeRequest:
        rated = parse_bool(form, "rated")
        limit_s = _parse_int(form, "clock.limit")
        increment_s = _parse_int(form, "clock.increment")
        days = _parse_int(form, "days")
        if limit_s is not None or increment_s is not None:
            if limit_s is None or limit_s not in CLOCK_LIMITS_S:
                raise form_error("clock.limit", "Invalid value")
            if increment_s is None or not 0 <= increment_s <= MAX_INCREMENT_S:
                raise form_error("clock.increment", "Invalid value")
            if limit_s == 0 and increment_s == 0:
                raise ApiError(400, "Invalid clock")
            time_control = TimeControl(limit_s=limit_s, increment_s=increment_s)
        elif days is not None:
            if days not in CORRESPONDENCE_DAYS:
                raise form_error("days", "Invalid value")
            time_control = TimeControl(days=days)
        else:
            time_control = TimeControl()
        color = (form.get("color") or "random").strip()
        if color not in COLORS:
            raise form_error("color", "Invalid value: use white, black or random")
        variant = (form.get("variant") or "standard").strip()
        if variant not in VARIANTS:
            raise form_error("variant", "Invalid value")
        fen = (form.get("fen") or "").strip() or None
        if fen is not None:
            fen, variant = _check_fen(fen, variant)
        elif variant == "fromPosition":
            raise form_error("fen", "A game from position needs a FEN")
        if rated and (fen is not None or time_control.kind == "unlimited"):
            raise ApiError(400, "This game can't be rated")
        rules = frozenset(r.strip() for r in (form.get("rules") or "").split(",") if r.strip())
        if not rules <= RULES:
            raise form_error("rules", f"Invalid value: known rules are {sorted(RULES)}")
        return cls(rated=rated, time_control=time_control, color=color, variant=variant,
                   fen=fen, keep_alive_stream=parse_bool(form, "keepAliveStream"), rules=rules)


def _check_fen(fen: str, variant: str) -> tuple[str, str]:
    """Validate a starting FEN; a standard game from a non-initial FEN is fromPosition."""
    if variant not in ("standard", "fromPosition", "chess960"):
        raise form_error("fen", "A FEN is allowed only for standard, fromPosition or chess960")
    try:
        board = chess.Board(fen, chess960=True)
    except ValueError as exc:
        raise form_error("fen", f"invalidFen: {exc}") from None
    if not board.is_valid():
        raise form_error("fen", f"invalidFen: illegal position ({board.status()!r})")
    if board.is_game_over():
        raise form_error("fen", "invalidFen: the game is already over in this position")
    if variant == "chess960":
        if board.chess960_pos() is None:
            raise form_error("fen", "invalidFen: not a Chess960 starting position")
        return board.fen(), variant
    if variant == "standard" and board.fen() == chess.STARTING_FEN:
        return board.fen(), variant
    return board.fen(), "fromPosition"


@dataclass
class Challenge:
    """A challenge from one account to another, as stored by the sandbox."""

    challenger: Account
    dest: Account
    request: ChallengeRequest
    id: str = field(default_factory=lambda: new_id(GAME_ID_LENGTH))
    status: str = "created"
    final_color: str = ""
    decline_key: str | None = None
    decline_text: str | None = None
    created_at_s: float = field(default_factory=time.monotonic)
    # A rematch offer: the game just played (its own id is the next game's, lila
    # modules/challenge ChallengeMaker.makeRematch).
    rematch_of: str | None = None

    def __post_init__(self) -> None:
        if not self.final_color:
            color = self.request.color
            self.final_color = (random.choice(("white", "black")) if color == "random"
                                else color)
        if self.request.variant == "chess960" and self.request.fen is None:
            board = chess.Board.from_chess960_pos(random.randrange(CHESS960_POSITIONS))
            self.request = dataclasses.replace(self.request, fen=board.fen())

    @property
    def pending(self) -> bool:
        """lila Challenge.scala `active`: created, or offline (its challenger unseen for a
        while), may still be accepted, declined or canceled."""
        return self.status in ("created", "offline")

    @property
    def realtime(self) -> bool:
        return self.request.time_control.kind == "clock"

    @property
    def perf(self) -> str:
        return perf_key(self.request.variant, self.request.time_control)

    def involves(self, account: Account) -> bool:
        return account.id in (self.challenger.id, self.dest.id)

    def json(self, base_url: str, direction: str | None = None,
             online: frozenset[str] = frozenset()) -> dict[str, Any]:
        """schemas/ChallengeJson.yaml (plus the decline fields once declined)."""
        request = self.request
        body: dict[str, Any] = {
            "id": self.id,
            "url": f"{base_url}/{self.id}",
            "status": self.status,
            # lila challenge JsonView: `"challenger" -> c.challengerUser`, null when the
            # challenger is anonymous (not logged in) or the challenge is open.
            "challenger": (None if self.challenger.anonymous
                           else self._user_json(self.challenger, online)),
            "destUser": self._user_json(self.dest, online),
            "variant": variant_json(request.variant),
            "rated": request.rated,
            "speed": request.time_control.speed,
            "timeControl": request.time_control.json(),
            "color": request.color,
            "finalColor": self.final_color,
            "perf": {"icon": PERF_ICONS.get(self.perf, ""), "name": PERF_NAMES[self.perf]},
        }
        if direction is not None:
            body["direction"] = direction
        if request.fen is not None:
            body["initialFen"] = request.fen
        if request.rules:
            body["rules"] = sorted(request.rules)
        if self.rematch_of is not None:
            body["rematchOf"] = self.rematch_of
        if self.decline_key is not None:
            body["declineReason"] = self.decline_text
            body["declineReasonKey"] = self.decline_key
        return body

    def _user_json(self, account: Account, online: frozenset[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": account.id,
            "name": account.username,
            "rating": account.rating(self.perf),
            "provisional": account.provisional(self.perf),
            "online": account.id in online,
            "lag": 1,
        }
        if account.title:
            body["title"] = account.title
        return body
