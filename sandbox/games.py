"""One game on the sandbox: the board, the clock, offers, chat and every way it can end."""

from __future__ import annotations

import re
import secrets
import string
import time
from dataclasses import dataclass, field
from typing import Protocol

import chess

from sandbox.accounts import Account
from sandbox.clock import UNLIMITED_MS, CorrespondenceClock, FischerClock
from sandbox.errors import ApiError, form_error
from sandbox.timecontrol import TimeControl, perf_key, variant_board
from sandbox.timers import LoopClock, SandboxClock, Timer

STATUS_IDS = {
    "created": 10, "started": 20, "aborted": 25, "mate": 30, "resign": 31, "stalemate": 32,
    "timeout": 33, "draw": 34, "outoftime": 35, "cheat": 36, "noStart": 37,
    "unknownFinish": 38, "insufficientMaterialClaim": 39, "variantEnd": 60,
}
PLAYING = frozenset({"created", "started"})
# Sources where a missed first move loses the game instead of aborting it.
MANDATORY_SOURCES = frozenset({"arena", "swiss", "tournament"})

ID_ALPHABET = string.ascii_letters + string.digits
GAME_ID_LENGTH = 8
PLAYER_ID_LENGTH = 4
MAX_CHAT_LENGTH = 140
# A draw offer needs this many plies played, and at most one offer per this many plies.
DRAW_OFFER_MIN_PLIES = 2
DRAW_OFFER_MIN_PLIES_NO_EARLY_DRAW = 60
# Seconds one may give the opponent at a time (POST /api/round/{id}/add-time/{seconds}).
MIN_GIVE_TIME_S = 5
MAX_GIVE_TIME_S = 60
DRAW_OFFER_INTERVAL_PLIES = 20
# lichess ends the game as a draw after 300 moves.
MAX_PLIES = 600
# Text that looks like a link: bot messages with links are silently dropped.
LINK_PATTERN = re.compile(
    r"https?://|www\.|\b[\w-]+\.(?:com|org|net|io|me|gg|tv|co|ly|info|xyz|ru|de|uk)\b",
    re.IGNORECASE,
)
# lila.common.String `isShouting`: a text at least this long whose first SHOUT_WINDOW_CHARS
# characters hold more capitals than small letters is lowered (castling words do not count).
SHOUT_MIN_CHARS = 5
SHOUT_WINDOW_CHARS = 80
CASTLING_WORD = re.compile(r"\bO-O(?:-O)?\b")
# lila ChatApi `Writer.multiline`: two or more newlines in a row become one space.
BLANK_LINES = re.compile(r"\n\n+")

# Time allowed for the first move, by speed (lila timeForFirstMove), outside and inside
# tournaments.
DEFAULT_FIRST_MOVE_S = {
    "ultraBullet": 15.0, "bullet": 20.0, "blitz": 25.0, "rapid": 30.0,
    "classical": 35.0, "correspondence": 35.0,
}
DEFAULT_TOURNAMENT_FIRST_MOVE_S = {
    "ultraBullet": 11.0, "bullet": 16.0, "blitz": 21.0, "rapid": 25.0,
    "classical": 30.0, "correspondence": 30.0,
}
DEFAULT_EXPIRABLE_SOURCES = frozenset({"lobby", "pool", "arena", "swiss"})


def new_id(length: int) -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(length))


@dataclass(frozen=True)
class FirstMoveTimers:
    """When a player who has not made a first move loses the game (or it is aborted).

    Lichess applies these only to games from the sources listed here: challenge games
    (source "friend") are never expired by the server, and the bot must abort them itself.
    """

    seconds_by_speed: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_FIRST_MOVE_S))
    tournament_seconds_by_speed: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_TOURNAMENT_FIRST_MOVE_S))
    sources: frozenset[str] = DEFAULT_EXPIRABLE_SOURCES

    def seconds(self, speed: str, source: str) -> float:
        if source in MANDATORY_SOURCES:
            return self.tournament_seconds_by_speed.get(
                speed, DEFAULT_TOURNAMENT_FIRST_MOVE_S["classical"])
        return self.seconds_by_speed.get(speed, DEFAULT_FIRST_MOVE_S["classical"])


@dataclass(frozen=True)
class ChatLine:
    room: str
    username: str
    text: str


class GameObserver(Protocol):
    """Receives everything a game does, to turn it into stream events."""

    def state_changed(self, game: Game) -> None: ...

    def chat_line(self, game: Game, line: ChatLine) -> None: ...

    def finished(self, game: Game) -> None: ...


@dataclass
class GameSettings:
    """Server-wide settings a game needs."""

    first_move: FirstMoveTimers = field(default_factory=FirstMoveTimers)
    # Offline this long, a player may be claimed against; None: lila's own delay by speed
    # and material (modules/round/src/main/RoundSocket.scala `povDisconnectTimeout`).
    claim_win_after_s: float | None = None
    legacy_castling: bool = False
    clock: SandboxClock = field(default_factory=LoopClock)

    def now(self) -> float:
        return self.clock.now()


DISCONNECT_TIMEOUT_S = 40.0  # lila RoundSocket.disconnectTimeout
RAGEQUIT_TIMEOUT_S = 10.0  # lila RoundSocket.ragequitTimeout
PIECE_POINTS = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


def material(board: chess.Board, color: chess.Color) -> int:
    return sum(points * len(board.pieces(piece, color)) for piece, points in PIECE_POINTS.items())


def color_name(color: chess.Color) -> str:
    return "white" if color else "black"


def is_shouting(text: str) -> bool:
    """lila.common.String `isShouting`: more capitals than small letters up front."""
    if len(text) < SHOUT_MIN_CHARS:
        return False
    window = CASTLING_WORD.sub(lambda m: m.group(0).lower(), text)[:SHOUT_WINDOW_CHARS]
    return sum(c.isupper() for c in window) > sum(c.islower() for c in window)


def clean_chat_text(text: str, username: str) -> str:
    """lila ChatApi `Writer.preprocessUserInput`: trim, lower shouting, blank lines to a
    space, one's own @mention to the bare name (`removeSelfMention`), at most 140 chars."""
    out = text.strip()
    if is_shouting(out):
        out = out.lower()
    out = BLANK_LINES.sub(" ", out)
    out = re.sub(rf"(?i)(?<![\w@#/])@{re.escape(username)}(?![@\w-]|\.\w)", username, out)
    return out[:MAX_CHAT_LENGTH]


class Game:
    """A game between two accounts, driven by API commands and by its own timers."""

    def __init__(
        self,
        *,
        white: Account,
        black: Account,
        variant: str,
        time_control: TimeControl,
        rated: bool,
        initial_fen: str | None,
        source: str,
        settings: GameSettings,
        observer: GameObserver,
        game_id: str | None = None,
        rules: frozenset[str] = frozenset(),
    ) -> None:
        self.id = game_id or new_id(GAME_ID_LENGTH)
        self.rules = rules  # challenge rules: noAbort, noEarlyDraw, noClaimWin, ...
        self.players = {chess.WHITE: white, chess.BLACK: black}
        self.player_ids = {chess.WHITE: new_id(PLAYER_ID_LENGTH),
                           chess.BLACK: new_id(PLAYER_ID_LENGTH)}
        self.variant = variant
        self.time_control = time_control
        self.rated = rated
        self.source = source
        # The arena that paired this game (gameStart's `tournamentId`), if any.
        self.tournament_id: str | None = None
        self.settings = settings
        self.observer = observer
        self.created_at_ms = int(time.time() * 1000)
        self.last_move_at_ms = self.created_at_ms
        self.board = variant_board(variant, initial_fen)
        self.initial_fen = initial_fen
        self.first_mover = self.board.turn
        self.status = "started"
        self.winner: chess.Color | None = None
        self.uci_moves: list[str] = []
        self.clock_ms_history: list[int] = []
        self.clock: FischerClock | None = None
        self.correspondence: CorrespondenceClock | None = None
        if time_control.limit_s is not None:
            self.clock = FischerClock(
                time_control.limit_s, time_control.increment_s or 0, settings.clock.now)
        elif time_control.days is not None:
            self.correspondence = CorrespondenceClock(
                time_control.days, self.board.turn, settings.clock.now)
        self.draw_offers: set[chess.Color] = set()
        self.last_draw_offer_ply: dict[chess.Color, int] = {}
        self.takeback_offers: set[chess.Color] = set()
        self.chat: list[ChatLine] = []
        self.gone_since_s: dict[chess.Color, float] = {}
        self.rating_diffs: dict[chess.Color, int] = {}
        self.ratings_before = {c: a.rating(self.perf) for c, a in self.players.items()}
        self._turn_started_s = settings.now()
        self._timer: Timer | None = None
        self._schedule_timer()

    # --- facts -------------------------------------------------------------------------

    @property
    def speed(self) -> str:
        return self.time_control.speed

    @property
    def perf(self) -> str:
        return perf_key(self.variant, self.time_control)

    @property
    def plies(self) -> int:
        return len(self.uci_moves)

    @property
    def playing(self) -> bool:
        return self.status in PLAYING

    @property
    def turn(self) -> chess.Color:
        return self.board.turn

    @property
    def moves(self) -> str:
        return " ".join(self.uci_moves)

    @property
    def expirable(self) -> bool:
        return (self.playing and self.plies < 2
                and self.source in self.settings.first_move.sources)

    @property
    def mandatory(self) -> bool:
        """lila Game.isMandatory: a tournament game is never abortable (no rule needed)."""
        return self.tournament_id is not None

    @property
    def abortable(self) -> bool:
        return (self.playing and self.plies < 2 and not self.mandatory
                and "noAbort" not in self.rules)

    def full_id(self, color: chess.Color) -> str:
        return self.id + self.player_ids[color]

    def color_of(self, account: Account) -> chess.Color | None:
        for color, player in self.players.items():
            if player.id == account.id:
                return color
        return None

    def require_player(self, account: Account) -> chess.Color:
        color = self.color_of(account)
        if color is None:
            raise ApiError(404, "Not your game")
        return color

    def remaining_ms(self, color: chess.Color) -> int:
        if self.clock is not None:
            return int(self.clock.remaining_ms(color))
        if self.correspondence is not None:
            return int(self.correspondence.remaining_ms(color))
        return UNLIMITED_MS

    def millis_to_first_move(self) -> int:
        return int(self.settings.first_move.seconds(self.speed, self.source) * 1000)

    def idle_ms(self) -> int:
        return int((self.settings.now() - self._turn_started_s) * 1000)

    # --- moves -------------------------------------------------------------------------

    def move(self, account: Account, uci: str, offering_draw: bool | None = None) -> None:
        color = self.require_player(account)
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            move = chess.Move.null()
        if not move:  # python-chess reads "0000" as a null move; lila knows no such move
            raise ApiError(400, f"Invalid UCI: {uci}")
        self.check_flag()
        if not self.playing or self.turn != color:
            raise ApiError(400, "Not your turn, or game already over")
        try:
            move = self.board.parse_uci(uci)
        except ValueError:
            raise ApiError(400, self._illegal_reason(move)) from None
        accepting = offering_draw is True and (not color) in self.draw_offers
        # lila BotPlayer.scala `apply`: the offer is judged (and made) before the move is
        # played, so it needs 2 plies already on the board, not counting this move.
        offering = bool(offering_draw) and not accepting and self._may_offer_draw(color)
        offer_ply = self.plies
        self._push(move)
        if self._end_by_rules():
            return
        if accepting:
            self._system_message("Draw offer accepted")
            self._finish("draw", None)
            return
        if offering:
            self._record_draw_offer(color, offer_ply)
        self._schedule_timer()
        self.observer.state_changed(self)

    def _illegal_reason(self, move: chess.Move) -> str:
        if move.drop is not None:
            return f"Cannot drop on {chess.square_name(move.to_square)}"
        piece = self.board.piece_at(move.from_square)
        from_name = chess.square_name(move.from_square)
        if piece is None or piece.color != self.turn:
            return f"No piece on {from_name}"
        return f"Piece on {from_name} cannot move to {chess.square_name(move.to_square)}"

    def _push(self, move: chess.Move) -> None:
        mover = self.turn
        chess960_notation = not (self.settings.legacy_castling and self.variant == "standard")
        self.uci_moves.append(self.board.uci(move, chess960=chess960_notation))
        self.board.push(move)
        self.draw_offers.discard(not mover)
        self.takeback_offers.clear()
        if self.clock is not None:
            if self.clock.running:
                self.clock.press(mover)
            elif self.plies >= 2:
                self.clock.start(self.turn)
            self.clock_ms_history.append(int(self.clock.remaining_ms(mover)))
        if self.correspondence is not None:
            self.correspondence.press(self.turn)
        self._turn_started_s = self.settings.now()
        self.last_move_at_ms = int(time.time() * 1000)

    def _end_by_rules(self) -> bool:
        """The game's end by the variant's rules, with lila's statuses (scalachess
        Situation.status: mate, variantEnd, stalemate, draw; a variant's own draw, racing
        kings' both kings home, is a draw)."""
        board = self.board
        outcome = board.outcome()  # python-chess's rules of the variant
        termination = outcome.termination if outcome is not None else None
        if termination in (chess.Termination.VARIANT_WIN, chess.Termination.VARIANT_LOSS):
            # The hill reached, a third check, a king blown up, ... scalachess's
            # Situation.status (Situation.scala) asks checkMate before variantEnd, so a third
            # check (or a step onto the hill) that also mates is "mate" on lila; python-chess
            # has no legal moves once a variant has ended: the plain chess board is asked.
            assert outcome is not None
            self._finish("mate" if self._also_mate() else "variantEnd", outcome.winner)
        elif board.is_checkmate():
            self._finish("mate", not board.turn)
        elif termination is chess.Termination.STALEMATE:
            self._finish("stalemate", None)
        elif (termination is not None or board.is_repetition(3) or self.plies >= MAX_PLIES
              or (board.halfmove_clock >= 100 and self.variant != "crazyhouse")):
            # Crazyhouse has no fifty-move rule (scalachess Crazyhouse.fiftyMoves).
            self._finish("draw", None)
        else:
            return False
        return True

    def _also_mate(self) -> bool:
        """A variant's end that is checkmate by chess's rules too (three-check, king of the
        hill: the variants whose checks are chess's checks)."""
        if self.variant not in ("threeCheck", "kingOfTheHill"):
            return False
        board = self.board
        plain = chess.Board.empty()
        plain.set_piece_map(board.piece_map())
        plain.turn, plain.castling_rights, plain.ep_square = \
            board.turn, board.castling_rights, board.ep_square
        return plain.is_checkmate()

    # --- timers --------------------------------------------------------------------------

    def _schedule_timer(self) -> None:
        """Arm one timer for the next thing that can end the game by itself."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.playing:
            return
        delay_s: float | None = None
        if self.expirable:
            delay_s = self.settings.first_move.seconds(self.speed, self.source)
        elif self.clock is not None:
            delay_s = self.clock.seconds_to_flag()
        elif self.correspondence is not None:
            delay_s = self.correspondence.seconds_to_flag()
        if delay_s is not None:
            self._timer = self.settings.clock.call_later(max(delay_s, 0.0) + 0.001,
                                                         self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self.playing:
            return
        if self.expirable:
            if self.idle_ms() >= self.millis_to_first_move():
                culprit = self.turn
                if self.source in MANDATORY_SOURCES:
                    self._finish("noStart", not culprit)
                else:
                    self._finish("aborted", None)
                return
        elif self.check_flag():
            return
        self._schedule_timer()

    def check_flag(self) -> bool:
        """End the game on time if the side to move has run out; True if it ended."""
        if not self.playing:
            return False
        flagged = False
        if self.clock is not None:
            flagged = self.clock.flagged(self.turn)
        elif self.correspondence is not None:
            flagged = self.correspondence.seconds_to_flag() <= 0.0
        if not flagged:
            return False
        loser = self.turn
        winner: chess.Color | None = not loser
        if self.board.has_insufficient_material(not loser):
            winner = None
        self._finish("outoftime", winner)
        return True

    # --- commands ------------------------------------------------------------------------

    def abort(self, account: Account) -> None:
        self.require_player(account)
        if not self.abortable:
            raise ApiError(400, "This game can no longer be aborted")
        self._finish("aborted", None)

    def resign(self, account: Account) -> None:
        color = self.require_player(account)
        self.check_flag()
        # Under noAbort, the first two plies can be neither aborted nor resigned (lila#15318);
        # a mandatory game is resignable from the start (Game.resignable: !abortable).
        if not self.playing or (self.plies < 2 and "noAbort" in self.rules):
            raise ApiError(400, "This game cannot be resigned")
        if self.abortable:
            self._finish("aborted", None)
        else:
            self._finish("resign", not color)

    def draw(self, account: Account, yes: bool) -> None:
        """Offer or accept a draw (yes), or decline the opponent's offer (no)."""
        color = self.require_player(account)
        if not self.drawable:  # BotPlayer.scala `offerDraw` / `declineDraw`
            return
        if not yes:
            self._decline(self.draw_offers, color, "Draw offer declined")
            return
        if (not color) in self.draw_offers:
            self._system_message("Draw offer accepted")
            self._finish("draw", None)
        elif self._offer_draw(color):
            self.observer.state_changed(self)

    def _decline(self, offers: set[chess.Color], color: chess.Color, message: str) -> None:
        """`color` declines the opponent's standing offer, if there is one."""
        if (not color) in offers:
            offers.discard(not color)
            self._system_message(message)
            self.observer.state_changed(self)

    @property
    def drawable(self) -> bool:
        """lila Game.scala `drawable` (playable && !abortable): playing, past the abortable
        plies (a mandatory game has none), and not held back by the noEarlyDraw rule (60
        plies)."""
        return (self.playing and (self.plies >= 2 or self.mandatory)
                and not ("noEarlyDraw" in self.rules
                         and self.plies < DRAW_OFFER_MIN_PLIES_NO_EARLY_DRAW))

    def _may_offer_draw(self, color: chess.Color) -> bool:
        """lila GameExt `playerCanOfferDraw`: from ply 2 (60 under noEarlyDraw), not while
        already offering, and one offer per 20 plies; on either player's turn."""
        last = self.last_draw_offer_ply.get(color)
        min_plies = (DRAW_OFFER_MIN_PLIES_NO_EARLY_DRAW if "noEarlyDraw" in self.rules
                     else DRAW_OFFER_MIN_PLIES)
        return not (self.plies < min_plies or color in self.draw_offers
                    or (last is not None and self.plies - last < DRAW_OFFER_INTERVAL_PLIES))

    def _offer_draw(self, color: chess.Color) -> bool:
        if not self._may_offer_draw(color):
            return False
        self._record_draw_offer(color, self.plies)
        return True

    def _record_draw_offer(self, color: chess.Color, ply: int) -> None:
        self.draw_offers.add(color)
        self.last_draw_offer_ply[color] = ply
        self._system_message(f"{color_name(color).capitalize()} offers draw")

    def takeback(self, account: Account, yes: bool) -> None:
        """Propose or accept a takeback (yes), or decline the opponent's proposal (no)."""
        color = self.require_player(account)
        if not self.playing or not self.takebacks_allowed:
            return
        if not yes:
            self._decline(self.takeback_offers, color, "Takeback declined")
            return
        if (not color) in self.takeback_offers:
            proposer = not color
            # Undo until the proposer is to move again.
            count = 2 if self.turn == proposer else 1
            for _ in range(min(count, self.plies)):
                self.board.pop()
                self.uci_moves.pop()
                if self.clock_ms_history:
                    self.clock_ms_history.pop()
            self.takeback_offers.clear()
            self.draw_offers.clear()
            # The side to move now has the running clock; no time is given back.
            if self.clock is not None and self.clock.running:
                self.clock.switch(self.turn)
            if self.correspondence is not None:
                self.correspondence.press(self.turn)
            self._turn_started_s = self.settings.now()
            self._system_message("Takeback accepted")
            self._schedule_timer()
            self.observer.state_changed(self)
        elif color not in self.takeback_offers and self.has_moved(color):
            self.takeback_offers.add(color)
            self._system_message("Takeback sent")
            self.observer.state_changed(self)

    @property
    def takebacks_allowed(self) -> bool:
        """lila Takebacker.scala `isAllowedByPrefs`: both players' takeback preference must
        allow it, and a BOT's is always NEVER (modules/pref/src/main/PrefApi.scala `setBot`).
        So no takeback is ever proposed or granted in a game with a BOT; the request is
        still answered 200 (BotPlayer.scala `setTakeback` tells the round and returns)."""
        return not any(player.bot for player in self.players.values())

    def add_time(self, account: Account, seconds: int) -> None:
        """Give the opponent more time on the clock."""
        color = self.require_player(account)
        if not MIN_GIVE_TIME_S <= seconds <= MAX_GIVE_TIME_S:
            raise form_error("seconds", f"Use {MIN_GIVE_TIME_S} to {MAX_GIVE_TIME_S}")
        self.check_flag()
        if not self.playing or self.clock is None or "noGiveTime" in self.rules:
            raise ApiError(400, "This game does not accept more time")
        self.clock.give(not color, seconds * 1000)
        self._system_message(f"{color_name(not color).capitalize()} + {seconds} seconds")
        self._schedule_timer()
        self.observer.state_changed(self)

    def has_moved(self, color: chess.Color) -> bool:
        return self.plies >= (1 if color == self.first_mover else 2)

    def disconnect_timeout_s(self, color: chess.Color) -> float:
        """How long `color` may be offline before the opponent may claim the game.

        lila modules/round/src/main/RoundSocket.scala `povDisconnectTimeout`: 40 s, times 3
        in classical and 2 in rapid, divided by 3 for a side down 4 points of material
        (not in antichess, crazyhouse, horde), by 2 for a player not logged in
        (`pov.player.hasUser`); at least `ragequitTimeout`, 10 s."""
        if self.settings.claim_win_after_s is not None:
            return self.settings.claim_win_after_s
        speed = self.time_control.speed
        timeout_s = DISCONNECT_TIMEOUT_S * {"classical": 3, "rapid": 2}.get(speed, 1)
        if self.variant not in ("antichess", "crazyhouse", "horde"):
            imbalance = material(self.board, chess.WHITE) - material(self.board, chess.BLACK)
            if (color == chess.WHITE and imbalance <= -4) or \
                    (color == chess.BLACK and imbalance >= 4):
                timeout_s /= 3
        if self.players[color].anonymous:
            timeout_s /= 2
        return max(timeout_s, RAGEQUIT_TIMEOUT_S)

    def long_gone(self, color: chess.Color) -> bool:
        """lila RoundAsyncActor.scala `isLongGone`: offline past its disconnect timeout."""
        since = self.gone_since_s.get(color)
        return since is not None and \
            self.settings.now() - since >= self.disconnect_timeout_s(color)

    def claim_victory(self, account: Account) -> None:
        """lila modules/bot/src/main/BotPlayer.scala `claimVictory`: `pov.mightClaimWin.so`,
        so on our own turn, in a finished game or one without a clock nothing happens (and
        the reply is OK); on the opponent's turn the claim wins if the opponent is long gone
        (RoundAsyncActor `ResignForce`: a draw if we cannot mate), else it is refused."""
        color = self.require_player(account)
        # Game.scala `forceResignable`: resignable (past the abortable plies), with a clock,
        # not under noClaimWin.
        if not self.playing or self.plies < 2 or self.clock is None or self.turn == color \
                or "noClaimWin" in self.rules:
            return
        if not self.long_gone(not color):
            raise ApiError(400, "You cannot claim the win on this game")
        winner = None if self.board.has_insufficient_material(color) else color
        self._finish("timeout", winner)

    def claim_draw(self, account: Account) -> None:
        """lila BotPlayer.scala `claimDraw`: `pov.game.drawable.so`, then `DrawForce`: a draw
        if the opponent is long gone, else refused. Nothing happens (200) in a game that is
        not `drawable`: finished, still abortable, or under noEarlyDraw."""
        color = self.require_player(account)
        if not self.drawable:
            return
        if self.clock is None or not self.long_gone(not color):
            raise ApiError(400, "You cannot claim draw on this game")
        self._finish("draw", None)

    # --- chat ----------------------------------------------------------------------------

    def say(self, account: Account, room: str, text: str) -> None:
        """Post to a chat room as lila does (modules/bot/src/main/BotForm.scala, then
        modules/chat/src/main/ChatApi.scala `makeLine` and `Writer.preprocessUserInput`).

        The form wants 1-140 characters of raw text and a room of player or spectator (else
        400). The text is then cleaned, not refused: trimmed, runs of blank lines made one
        space, shouting lowered, one's own @mention made a plain name, cut to 140; a BOT's
        line with a link, or a line that cleans down to nothing, is dropped silently (200).
        """
        if not text.strip():  # Play's nonEmptyText trims
            raise form_error("text", "This field is required")
        if len(text) > MAX_CHAT_LENGTH:
            raise form_error("text", f"Maximum length is {MAX_CHAT_LENGTH}")
        if room not in ("player", "spectator"):
            raise form_error("room", "Invalid value: use player or spectator")
        cleaned = clean_chat_text(text, account.username)
        if not cleaned or (account.bot and LINK_PATTERN.search(cleaned)):
            return
        self._add_chat(ChatLine(room, account.username, cleaned))

    def _system_message(self, text: str) -> None:
        self._add_chat(ChatLine("player", "lichess", text))

    def _add_chat(self, line: ChatLine) -> None:
        self.chat.append(line)
        self.observer.chat_line(self, line)

    # --- the end -------------------------------------------------------------------------

    def finish_by_server(self, status: str, winner: chess.Color | None) -> None:
        """End the game from outside (the sandbox's own API), if it is still running."""
        if self.playing:
            self._finish(status, winner)

    def _finish(self, status: str, winner: chess.Color | None) -> None:
        self.status = status
        self.winner = winner
        self.draw_offers.clear()
        self.takeback_offers.clear()
        if self.clock is not None:
            self.clock.stop()
        if self.correspondence is not None:
            self.correspondence.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.observer.finished(self)

    def cancel_timers(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
