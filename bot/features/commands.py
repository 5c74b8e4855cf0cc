"""Chat commands: ``!help``, ``!name``, ``!eval``, ``!pv on|off``, ``!queue``, ``!wait``.

Chat lines come from strangers, so nothing here trusts them: only the first
few characters are parsed, the command word must be short and alphanumeric,
no part of the input is ever echoed, every reply goes through the chat
sanitizer (one line, no link, at most 140 characters), and each room gets a
limited number of replies per minute so a flood of commands cannot turn the
bot into a spammer.

:meth:`CommandResponder.respond` is pure apart from that reply budget: it
returns the reply and the action the game should take, and the game does
the posting.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.game.chat import kibitz_line, sanitize
from bot.game.hooks import CommandAction, CommandContext, CommandReply

# Only this much of a chat line is looked at.
MAX_PARSED_CHARS = 64
# Replies per room in a sliding window, and the window.
MAX_REPLIES_PER_WINDOW = 8
REPLY_WINDOW_S = 60.0
# Users whose lines are never commands (the server's own messages).
SYSTEM_USERS = frozenset({"lichess"})

_COMMAND = re.compile(r"!([A-Za-z]{1,12})(?:\s+([A-Za-z]{1,8}))?\s*$")

HELP_TEXT = "Commands: !help !name !eval !pv on|off !queue !wait"
UNKNOWN_HINT = "Unknown command. Type !help for the list."


@dataclass
class CommandResponder:
    """Answers the chat commands of one game, within a reply budget per room."""

    clock: Callable[[], float] = time.monotonic
    _sent: dict[str, deque[float]] = field(default_factory=dict)

    def respond(self, *, room: str, username: str, text: str,
                context: CommandContext) -> CommandReply | None:
        """The reply to one chat line, or None (not a command, or over the budget)."""
        if room not in ("player", "spectator"):
            return None
        if not isinstance(text, str) or not text.lstrip().startswith("!"):
            return None
        name = username.lower() if isinstance(username, str) else ""
        if name == context.me.lower() or name in SYSTEM_USERS:
            return None
        if not self._spend(room):
            return None
        reply, action = _answer(text.strip()[:MAX_PARSED_CHARS + 1], room, context)
        safe = sanitize(reply)
        return CommandReply(room, safe, action) if safe else None

    def _spend(self, room: str) -> bool:
        now = self.clock()
        sent = self._sent.setdefault(room, deque())
        while sent and now - sent[0] > REPLY_WINDOW_S:
            sent.popleft()
        if len(sent) >= MAX_REPLIES_PER_WINDOW:
            return False
        sent.append(now)
        return True


def _answer(text: str, room: str, context: CommandContext) -> tuple[str, CommandAction | None]:
    match = _COMMAND.match(text) if len(text) <= MAX_PARSED_CHARS else None
    if match is None:
        return UNKNOWN_HINT, None
    command, argument = match.group(1).lower(), (match.group(2) or "").lower()
    if command == "help":
        return HELP_TEXT, None
    if command == "name":
        return f"I am {context.me}, running {context.engine}.", None
    if command == "eval":
        return _eval(room, context), None
    if command == "pv":
        return _pv(argument, context)
    if command == "queue":
        return _queue(context), None
    if command == "wait":
        return _wait(room, context)
    return UNKNOWN_HINT, None


def _eval(room: str, context: CommandContext) -> str:
    if room == "player" and not context.eval_for_opponent:
        return "I share my evaluation with spectators only."
    if context.last_search is None:
        return "No evaluation yet."
    board, line = context.last_search
    return kibitz_line(board, line) or "No evaluation yet."


def _pv(argument: str, context: CommandContext) -> tuple[str, CommandAction | None]:
    if argument == "on":
        return "PV after each move: on.", CommandAction.PV_ON
    if argument == "off":
        return "PV after each move: off.", CommandAction.PV_OFF
    state = "on" if context.kibitz_on else "off"
    return f"PV after each move is {state}. Use !pv on or !pv off.", None


def _queue(context: CommandContext) -> str:
    if context.queue is None:
        return "The challenge queue is not available."
    if not context.queue:
        return "No challenges waiting."
    names = [sanitize(name, 30) for name in context.queue]
    return f"Challenges waiting ({len(names)}): " + ", ".join(n for n in names if n)


def _wait(room: str, context: CommandContext) -> tuple[str, CommandAction | None]:
    if room != "player":
        return "Only my opponent can ask me to wait.", None
    if not context.abortable:
        return "The game is under way; no need to wait.", None
    return f"OK, I will wait {context.wait_s:.0f} s more for your move.", CommandAction.WAIT
