"""Greetings at the start and end of a game, for the player and spectator rooms.

Templates come from the config (``chat.greeting_start``, ``chat.greeting_end``)
with the placeholders ``{me}``, ``{opponent}``, ``{engine}`` and ``{strength}`` (the
game's level: "full strength", "Elo 1250"); ``{{`` and ``}}``
stand for literal braces. Anything else in braces is left as written rather
than failing, and every line goes through the chat sanitizer.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from bot.game.chat import sanitize
from bot.ops.config import ChatConfig

# {{ or }} (literal braces) or {name}.
_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)\}")


class GamePhase(enum.StrEnum):
    START = "start"
    END = "end"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A line to post: the room ("player" or "spectator") and the sanitized text."""

    room: str
    text: str


def render(template: str, *, me: str, opponent: str, engine: str, strength: str = "") -> str:
    """``template`` with its placeholders filled, safe to send ("" = say nothing)."""
    values = {"me": me, "opponent": opponent, "engine": engine, "strength": strength}

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return values.get(match.group(1), token)

    return sanitize(_FIELD.sub(fill, template))


def greetings(chat: ChatConfig, phase: GamePhase, *, me: str, opponent: str,
              engine: str, strength: str = "") -> list[ChatMessage]:
    """The greeting lines to post at ``phase`` of a game, one per configured room."""
    template = chat.greeting_start if phase is GamePhase.START else chat.greeting_end
    text = render(template, me=me, opponent=opponent, engine=engine, strength=strength)
    if not text:
        return []
    return [ChatMessage(room, text) for room in chat.greeting_rooms]
