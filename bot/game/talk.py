"""Offers and chat of one game: answers to draw and takeback offers, answers to chat commands,
the greetings, and the kibitz line after our moves. Every request runs as a helper task of
the game, so the stream is read all the while.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final

import chess

from bot.engines.searchline import SearchLine
from bot.game import chat
from bot.game.conduct import Conduct, TakebackLedger
from bot.game.greetings import ChatMessage, GamePhase, greetings
from bot.game.hooks import (
    ChatCommandHandler,
    CommandAction,
    CommandContext,
    GameContext,
    LastSearch,
)
from bot.game.metrics import Metrics
from bot.game.position import Position
from bot.lichess.client import Lichess, LichessError, RequestError, Unavailable, attempt
from bot.lichess.events import ChatLine, GameState
from bot.ops.config import Config

log = logging.getLogger(__name__)

GOODBYE_TIMEOUT_S: Final = 10.0  # the goodbye line gets at most this

Spawn = Callable[[Coroutine[Any, Any, object], str], "asyncio.Task[None]"]


class Talk:
    def __init__(self, game_id: str, *, client: Lichess, config: Config, me: str,
                 conduct: Conduct, ledger: TakebackLedger,
                 commands: ChatCommandHandler | None,
                 challenge_queue: Callable[[], Sequence[str]] | None,
                 metrics: Metrics, spawn: Spawn) -> None:
        self.game_id = game_id
        self.client = client
        self.config = config
        self.me = me
        self.conduct = conduct
        self.ledger = ledger
        self.commands = commands
        self.challenge_queue = challenge_queue
        self.metrics = metrics
        self.spawn = spawn
        self.kibitz_on = config.chat.kibitz_every > 0
        self._answered_draw: int | None = None  # the ply whose draw offer we answered
        self._answered_takeback: int | None = None

    # --- offers ---------------------------------------------------------------------------------

    def answer_offers(self, state: GameState, position: Position) -> None:
        """Answer the opponent's draw or takeback offer in `state`, once per ply."""
        theirs = state.offers_for(not position.context.color)
        ply = len(state.moves)
        if theirs.draw and self._answered_draw != ply:
            self._answered_draw = ply
            accept = self.conduct.should_accept_draw(position.board.fullmove_number)
            log.info("draw offered: %s", "accepting" if accept else "declining")
            self.spawn(attempt("draw answer", self.client.answer_draw(self.game_id, accept)),
                       "draw")
        if theirs.takeback and self._answered_takeback != ply:
            self._answered_takeback = ply
            accept = self.ledger.request(self.game_id)
            log.info("takeback requested: %s", "accepting" if accept else "declining")
            self.spawn(
                attempt("takeback answer", self.client.answer_takeback(self.game_id, accept)),
                "takeback")

    # --- chat -------------------------------------------------------------------------------------

    def on_chat(self, line: ChatLine, *, context: GameContext, abortable: bool, engine: str,
                last_search: LastSearch | None) -> CommandAction | None:
        """Answer a chat command; the action the game must carry out (the kibitz switch is
        handled here)."""
        log.debug("chat %s <%s> %r", line.room, line.username, line.text)
        if self.commands is None:
            return None
        command_context = CommandContext(
            me=self.me, engine=engine, opponent=context.opponent.name,
            eval_for_opponent=self.config.chat.eval_for_opponent,
            abortable=abortable, wait_s=self.config.game.abort_after_s,
            kibitz_on=self.kibitz_on, last_search=last_search,
            queue=self.challenge_queue() if self.challenge_queue else None,
        )
        try:
            reply = self.commands.respond(room=line.room, username=line.username,
                                          text=line.text, context=command_context)
        except Exception as exc:
            log.warning("chat command %.40r failed: %s: %s", line.text, type(exc).__name__, exc)
            return None
        if reply is None:
            return None
        if reply.action is CommandAction.PV_ON:
            self.kibitz_on = True
        elif reply.action is CommandAction.PV_OFF:
            self.kibitz_on = False
            self.client.forget_held_chat(self.game_id)
        self.spawn(self.send(ChatMessage(reply.room, reply.text)), "chat reply")
        return reply.action

    def kibitz(self, board: chess.Board, line: SearchLine | None, moves_played: int) -> None:
        """The search line after our move, every `kibitz_every` moves while it is on."""
        every = self.config.chat.kibitz_every
        if line is None or not self.kibitz_on or every <= 0 or moves_played % every:
            return
        text = chat.kibitz_line(board, line)
        if not text:
            return
        for room in self.config.chat.kibitz_rooms:
            self.spawn(self.send(ChatMessage(room, text), droppable=True), "kibitz")

    def greet(self, context: GameContext, engine: str, strength: str = "") -> None:
        for message in self._greetings(GamePhase.START, context, engine, strength):
            self.spawn(self.send(message), "greeting")

    async def say_goodbye(self, context: GameContext, engine: str, strength: str = "") -> None:
        """The goodbye lines, each within GOODBYE_TIMEOUT_S; a failure is dropped."""
        for message in self._greetings(GamePhase.END, context, engine, strength):
            with contextlib.suppress(LichessError, TimeoutError):
                async with asyncio.timeout(GOODBYE_TIMEOUT_S):
                    await self.send(message)

    def _greetings(self, phase: GamePhase, context: GameContext,
                   engine: str, strength: str) -> list[ChatMessage]:
        return greetings(self.config.chat, phase, me=self.me, opponent=context.opponent.name,
                         engine=engine, strength=strength)

    async def send(self, message: ChatMessage, *, droppable: bool = False) -> None:
        """Post a line. A PV line (`droppable`) is held and merged with newer ones when the
        request budget is tight; greetings and answers to people wait behind the moves."""
        text = chat.sanitize(message.text)
        if not text:
            return
        try:
            sent = await self.client.chat(self.game_id, message.room, text, droppable=droppable)
        except (RequestError, Unavailable) as exc:  # a line is worth little: dropped
            log.info("chat line to %s dropped: %s", message.room, exc)
            return
        if sent:  # a line held for later is not counted
            self.metrics.chat_lines += 1
