"""Greetings: placeholders, rooms, start and end, hostile templates."""

from __future__ import annotations

from dataclasses import replace

from bot.game.greetings import ChatMessage, GamePhase, greetings, render
from bot.ops.config import ChatConfig

NAMES = {"me": "KibitzBot", "opponent": "Magnus", "engine": "Kibitz 0.1"}


def test_default_greetings_in_both_rooms() -> None:
    start = greetings(ChatConfig(), GamePhase.START, **NAMES)
    assert [m.room for m in start] == ["player", "spectator"]
    assert start[0].text == "Hi Magnus, I am KibitzBot, running Kibitz 0.1. Good luck!"
    end = greetings(ChatConfig(), GamePhase.END, **NAMES)
    assert end == [ChatMessage("player", "Thanks for the game, Magnus!"),
                   ChatMessage("spectator", "Thanks for the game, Magnus!")]


def test_rooms_and_silence_follow_the_config() -> None:
    chat = replace(ChatConfig(), greeting_rooms=("spectator",), greeting_end="")
    assert [m.room for m in greetings(chat, GamePhase.START, **NAMES)] == ["spectator"]
    assert greetings(chat, GamePhase.END, **NAMES) == []


def test_unknown_placeholders_and_braces_are_safe() -> None:
    assert render("{{me}} is {me}", **NAMES) == "{me} is KibitzBot"
    assert render("{rating} {0} {me.__class__} {", **NAMES) == "{rating} {0} {me.__class__} {"
    assert render("gl {opponent}}", **NAMES) == "gl Magnus}"


def test_lines_are_sanitized() -> None:
    text = render("{opponent}\n" + "x" * 300 + " see https://example.com", **NAMES)
    assert len(text) <= 140 and "\n" not in text and "https" not in text
    assert render("visit www.example.com {me}", **NAMES) == "visit KibitzBot"
