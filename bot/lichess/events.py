"""Typed records for what the Lichess streams send, parsed once at the client boundary.

Lichess milliseconds become float seconds here. Every parser raises `EventError` naming the
field that is wrong, so a malformed line is logged and skipped by the caller instead of
breaking a stream.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import chess

STARTPOS: Final = "startpos"
UNLIMITED_MS: Final = 2147483647  # Int.MaxValue: what Lichess sends for a game without a clock

Color = Literal["white", "black"]


class GameStatus(enum.StrEnum):
    """The status names lila sends (scalachess `Status`); a record keeps the raw name, so a
    status added later still reads, and compares equal to these."""

    CREATED = "created"
    STARTED = "started"
    ABORTED = "aborted"
    MATE = "mate"
    RESIGN = "resign"
    STALEMATE = "stalemate"
    TIMEOUT = "timeout"
    DRAW = "draw"
    OUT_OF_TIME = "outoftime"
    CHEAT = "cheat"
    NO_START = "noStart"
    UNKNOWN_FINISH = "unknownFinish"
    INSUFFICIENT_MATERIAL_CLAIM = "insufficientMaterialClaim"
    VARIANT_END = "variantEnd"


ONGOING: Final = frozenset({GameStatus.CREATED, GameStatus.STARTED})


def is_ongoing(status: str) -> bool:
    """A game in this status goes on (nothing has ended it yet)."""
    return status in ONGOING


class EventError(ValueError):
    """A stream line that does not have the shape the Lichess API documents."""


# --- small field readers -------------------------------------------------------------------


def _obj(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if not isinstance(value, Mapping):
        raise EventError(f"field {key!r} must be an object, got {type(value).__name__}")
    return value


def _str(raw: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise EventError(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _opt_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise EventError(f"field {key!r} must be a string or null, got {type(value).__name__}")
    return value


def _num(raw: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EventError(f"field {key!r} must be a number, got {type(value).__name__}")
    return float(value)


def _opt_int(raw: Mapping[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EventError(f"field {key!r} must be a number or null, got {type(value).__name__}")
    return int(value)


def _bool(raw: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise EventError(f"field {key!r} must be a boolean, got {type(value).__name__}")
    return value


def _color(raw: Mapping[str, Any], key: str) -> Color | None:
    value = raw.get(key)
    if value is None:
        return None
    if value == "white":
        return "white"
    if value == "black":
        return "black"
    raise EventError(f"field {key!r} must be 'white' or 'black', got {value!r}")


def _status_name(raw: Mapping[str, Any], key: str = "status") -> str:
    """`gameState.status` is a name; `gameStart.status` is `{"id":…, "name":…}`."""
    value = raw.get(key, "started")
    if isinstance(value, Mapping):
        return _str(value, "name")
    if isinstance(value, str):
        return value
    raise EventError(f"field {key!r} must be a status name or object, got {type(value).__name__}")


def _ms_to_s(ms: float) -> float:
    return ms / 1000.0


# --- event stream (/api/stream/event) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GameInfo:
    """`GameEventInfo` of a gameStart / gameFinish event."""

    game_id: str
    full_id: str
    color: Color | None
    variant: str
    speed: str
    rated: bool
    source: str
    status: str
    opponent_id: str | None
    opponent_name: str
    winner: Color | None
    tournament_id: str | None = None  # the arena (or Swiss) that paired the game
    opponent_rating: int | None = None  # in the game's perf (none for an AI or anonymous)


@dataclass(frozen=True, slots=True)
class GameStart:
    game: GameInfo


@dataclass(frozen=True, slots=True)
class GameFinish:
    game: GameInfo


@dataclass(frozen=True, slots=True)
class ChallengeUser:
    id: str
    name: str
    title: str | None
    rating: int | None

    @property
    def is_bot(self) -> bool:
        return self.title == "BOT"

    @property
    def anonymous(self) -> bool:
        """A player who is not logged in (lila sends `"challenger": null`)."""
        return not self.id


ANONYMOUS: Final = ChallengeUser("", "Anonymous", None, None)
# lila's titles (modules/core user title list): gameStart and gameFinish name a titled
# opponent "TITLE name" (Namer.playerTextBlocking, `titleName`).
TITLES: Final = frozenset({"GM", "IM", "FM", "CM", "NM", "WGM", "WIM", "WFM", "WCM", "WNM",
                           "LM", "BOT"})


def bare_name(username: str) -> str:
    """The user name without lila's title prefix ("BOT kibitz" -> "kibitz")."""
    title, sep, name = username.partition(" ")
    return name if sep and title in TITLES and name else username


@dataclass(frozen=True, slots=True)
class TimeControl:
    kind: Literal["clock", "correspondence", "unlimited"]
    base_s: float = 0.0
    increment_s: float = 0.0
    days_per_turn: int | None = None


@dataclass(frozen=True, slots=True)
class Challenge:
    id: str
    challenger: ChallengeUser
    dest: ChallengeUser | None
    variant: str
    speed: str
    rated: bool
    time_control: TimeControl
    color: str
    initial_fen: str | None
    rules: tuple[str, ...]
    rematch_of: str | None
    bot_compatible: bool


@dataclass(frozen=True, slots=True)
class ChallengeEvent:
    challenge: Challenge


@dataclass(frozen=True, slots=True)
class ChallengeCanceled:
    challenge_id: str


@dataclass(frozen=True, slots=True)
class ChallengeDeclined:
    challenge_id: str
    reason_key: str | None


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """A line with a `type` this bot does not know: logged and skipped by the caller."""

    type: str


Event = (
    GameStart | GameFinish | ChallengeEvent | ChallengeCanceled | ChallengeDeclined | UnknownEvent
)


def _game_info(raw: Mapping[str, Any]) -> GameInfo:
    game = _obj(raw, "game")
    game_id = _str(game, "gameId", game.get("id"))
    variant = game.get("variant")
    variant_key = _str(variant, "key") if isinstance(variant, Mapping) else "standard"
    opponent = game.get("opponent")
    opponent_id: str | None = None
    opponent_name = "?"
    opponent_rating: int | None = None
    if isinstance(opponent, Mapping):
        opponent_id = _opt_str(opponent, "id")
        # GameEventInfo's opponent.rating: in the game's perf (lila sends none for an AI)
        opponent_rating = _opt_int(opponent, "rating")
        opponent_name = bare_name(_opt_str(opponent, "username") or opponent_id or "?")
    return GameInfo(
        game_id=game_id,
        full_id=_str(game, "fullId", game_id),
        color=_color(game, "color"),
        variant=variant_key,
        speed=_str(game, "speed", "unknown"),
        rated=_bool(game, "rated"),
        source=_str(game, "source", "unknown"),
        status=_status_name(game),
        opponent_id=opponent_id,
        opponent_name=opponent_name,
        winner=_color(game, "winner"),
        tournament_id=_opt_str(game, "tournamentId"),
        opponent_rating=opponent_rating,
    )


def _challenge_user(raw: Mapping[str, Any]) -> ChallengeUser:
    return ChallengeUser(
        id=_str(raw, "id"),
        name=_str(raw, "name", raw.get("id")),
        title=_opt_str(raw, "title"),
        rating=_opt_int(raw, "rating"),
    )


def _time_control(raw: Mapping[str, Any]) -> TimeControl:
    kind = _str(raw, "type")
    if kind == "clock":
        return TimeControl("clock", _num(raw, "limit"), _num(raw, "increment", 0))
    if kind == "correspondence":
        return TimeControl("correspondence", days_per_turn=_opt_int(raw, "daysPerTurn"))
    if kind == "unlimited":
        return TimeControl("unlimited")
    raise EventError(f"timeControl.type {kind!r} is not clock, correspondence or unlimited")


def parse_challenge(raw: Mapping[str, Any], compat: Mapping[str, Any] | None = None) -> Challenge:
    dest = raw.get("destUser")
    rules = raw.get("rules", ())
    if not isinstance(rules, list | tuple) or not all(isinstance(r, str) for r in rules):
        raise EventError("field 'rules' must be a list of strings")
    return Challenge(
        id=_str(raw, "id"),
        # null for an anonymous challenger (lila challenge JsonView `c.challengerUser`)
        challenger=(ANONYMOUS if raw.get("challenger") is None
                    else _challenge_user(_obj(raw, "challenger"))),
        dest=_challenge_user(dest) if isinstance(dest, Mapping) else None,
        variant=_str(_obj(raw, "variant"), "key"),
        speed=_str(raw, "speed"),
        rated=_bool(raw, "rated"),
        time_control=_time_control(_obj(raw, "timeControl")),
        color=_str(raw, "color", "random"),
        initial_fen=_opt_str(raw, "initialFen"),
        rules=tuple(rules),
        rematch_of=_opt_str(raw, "rematchOf"),
        bot_compatible=True if compat is None else bool(compat.get("bot", True)),
    )


def parse_event(raw: Any) -> Event:
    """One line of the event stream, already decoded from JSON."""
    if not isinstance(raw, Mapping):
        raise EventError(f"an event must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "gameStart":
        return GameStart(_game_info(raw))
    if kind == "gameFinish":
        return GameFinish(_game_info(raw))
    if kind == "challenge":
        compat = raw.get("compat")
        return ChallengeEvent(
            parse_challenge(_obj(raw, "challenge"), compat if isinstance(compat, Mapping) else None)
        )
    if kind == "challengeCanceled":
        return ChallengeCanceled(_str(_obj(raw, "challenge"), "id"))
    if kind == "challengeDeclined":
        challenge = _obj(raw, "challenge")
        return ChallengeDeclined(_str(challenge, "id"), _opt_str(challenge, "declineReasonKey"))
    if isinstance(kind, str):
        return UnknownEvent(kind)
    raise EventError("event has no 'type' string")


# --- game stream (/api/bot/game/stream/{id}) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Player:
    id: str | None
    name: str
    title: str | None
    rating: int | None
    ai_level: int | None = None


@dataclass(frozen=True, slots=True)
class SideClock:
    time_s: float
    increment_s: float


@dataclass(frozen=True, slots=True)
class SideOffers:
    draw: bool
    takeback: bool


@dataclass(frozen=True, slots=True)
class GameState:
    moves: tuple[str, ...]
    wtime_s: float
    btime_s: float
    winc_s: float
    binc_s: float
    status: str
    winner: Color | None = None
    wdraw: bool = False
    bdraw: bool = False
    wtakeback: bool = False
    btakeback: bool = False

    @property
    def is_over(self) -> bool:
        return not is_ongoing(self.status)

    def clock_for(self, color: chess.Color) -> SideClock:
        """`color`'s clock and increment, as of this state."""
        if color == chess.WHITE:
            return SideClock(self.wtime_s, self.winc_s)
        return SideClock(self.btime_s, self.binc_s)

    def offers_for(self, color: chess.Color) -> SideOffers:
        """What `color` offers in this state (a draw, a takeback)."""
        if color == chess.WHITE:
            return SideOffers(self.wdraw, self.wtakeback)
        return SideOffers(self.bdraw, self.btakeback)


@dataclass(frozen=True, slots=True)
class GameFull:
    id: str
    variant: str
    speed: str
    rated: bool
    initial_fen: str
    white: Player
    black: Player
    clock_initial_s: float | None
    clock_increment_s: float | None
    state: GameState


@dataclass(frozen=True, slots=True)
class ChatLine:
    room: str
    username: str
    text: str


@dataclass(frozen=True, slots=True)
class OpponentGone:
    gone: bool
    claim_win_in_s: float | None


GameEvent = GameFull | GameState | ChatLine | OpponentGone | UnknownEvent


def _player(raw: Mapping[str, Any]) -> Player:
    ai_level = _opt_int(raw, "aiLevel")
    name = _opt_str(raw, "name")
    player_id = _opt_str(raw, "id")
    if name is None:
        name = player_id or (f"AI level {ai_level}" if ai_level is not None else "?")
    return Player(player_id, name, _opt_str(raw, "title"), _opt_int(raw, "rating"), ai_level)


def parse_game_state(raw: Mapping[str, Any]) -> GameState:
    moves = _str(raw, "moves", "")
    return GameState(
        moves=tuple(moves.split()),
        wtime_s=_ms_to_s(_num(raw, "wtime", UNLIMITED_MS)),
        btime_s=_ms_to_s(_num(raw, "btime", UNLIMITED_MS)),
        winc_s=_ms_to_s(_num(raw, "winc", 0)),
        binc_s=_ms_to_s(_num(raw, "binc", 0)),
        status=_status_name(raw),
        winner=_color(raw, "winner"),
        wdraw=_bool(raw, "wdraw"),
        bdraw=_bool(raw, "bdraw"),
        wtakeback=_bool(raw, "wtakeback"),
        btakeback=_bool(raw, "btakeback"),
    )


def parse_game_event(raw: Any) -> GameEvent:
    """One line of a game stream, already decoded from JSON."""
    if not isinstance(raw, Mapping):
        raise EventError(f"a game event must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "gameState":
        return parse_game_state(raw)
    if kind == "gameFull":
        clock_raw = raw.get("clock")
        clock = clock_raw if isinstance(clock_raw, Mapping) else None
        variant = _obj(raw, "variant")
        return GameFull(
            id=_str(raw, "id"),
            variant=_str(variant, "key"),
            speed=_str(raw, "speed", "unknown"),
            rated=_bool(raw, "rated"),
            initial_fen=_str(raw, "initialFen", STARTPOS),
            white=_player(_obj(raw, "white")),
            black=_player(_obj(raw, "black")),
            clock_initial_s=_ms_to_s(_num(clock, "initial")) if clock is not None else None,
            clock_increment_s=(
                _ms_to_s(_num(clock, "increment")) if clock is not None else None
            ),
            state=parse_game_state(_obj(raw, "state")),
        )
    if kind == "chatLine":
        return ChatLine(_str(raw, "room"), _str(raw, "username"), _str(raw, "text"))
    if kind == "opponentGone":
        seconds = raw.get("claimWinInSeconds")
        return OpponentGone(
            _bool(raw, "gone"),
            float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool)
            else None,
        )
    if isinstance(kind, str):
        return UnknownEvent(kind)
    raise EventError("game event has no 'type' string")
