"""Chat commands, including hostile input."""

from __future__ import annotations

from dataclasses import replace

import chess
import chess.engine
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.engines.searchline import SearchLine
from bot.features.commands import (
    HELP_TEXT,
    MAX_REPLIES_PER_WINDOW,
    UNKNOWN_HINT,
    CommandResponder,
)
from bot.game.hooks import CommandAction, CommandContext, CommandReply

BOARD = chess.Board()
LINE = SearchLine(depth=14, score=chess.engine.PovScore(chess.engine.Cp(35), chess.WHITE),
                  pv=tuple(chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "g1f3")))
CONTEXT = CommandContext(me="KibitzBot", engine="Kibitz 0.1", opponent="Magnus",
                         eval_for_opponent=False, abortable=False, wait_s=60.0,
                         kibitz_on=True, last_search=(BOARD, LINE), queue=("alice", "bob"))


def maybe_ask(text: str, room: str = "spectator", username: str = "fan",
              context: CommandContext = CONTEXT,
              responder: CommandResponder | None = None) -> CommandReply | None:
    return (responder or CommandResponder()).respond(room=room, username=username, text=text,
                                                     context=context)


def ask(text: str, room: str = "spectator", username: str = "fan",
        context: CommandContext = CONTEXT) -> CommandReply:
    reply = maybe_ask(text, room, username, context)
    assert reply is not None
    return reply


def test_help_and_name() -> None:
    assert ask("!help").text == HELP_TEXT
    reply = ask("  !NAME  ", room="player", username="Magnus")
    assert reply.room == "player" and reply.text == "I am KibitzBot, running Kibitz 0.1."


def test_eval_for_spectators_and_the_opponent_only_when_allowed() -> None:
    reply = ask("!eval")
    assert "depth 14" in reply.text and "+0.35" in reply.text and "1. e4 e5 2. Nf3" in reply.text
    refused = ask("!eval", room="player", username="Magnus")
    assert "spectators" in refused.text and "0.35" not in refused.text
    allowed = ask("!eval", room="player", username="Magnus",
                  context=replace(CONTEXT, eval_for_opponent=True))
    assert "+0.35" in allowed.text
    assert ask("!eval", context=replace(CONTEXT, last_search=None)).text == "No evaluation yet."


def test_pv_switch() -> None:
    assert ask("!pv off").action is CommandAction.PV_OFF
    assert ask("!pv ON").action is CommandAction.PV_ON
    status = ask("!pv", context=replace(CONTEXT, kibitz_on=False))
    assert status.action is None and "off" in status.text


def test_queue() -> None:
    assert ask("!queue").text == "Challenges waiting (2): alice, bob"
    assert ask("!queue", context=replace(CONTEXT, queue=())).text == "No challenges waiting."
    assert "not available" in ask("!queue", context=replace(CONTEXT, queue=None)).text


def test_wait_only_for_the_opponent_while_abortable() -> None:
    waiting = replace(CONTEXT, abortable=True)
    reply = ask("!wait", room="player", username="Magnus", context=waiting)
    assert reply.action is CommandAction.WAIT and "60 s" in reply.text
    assert ask("!wait", room="player", username="Magnus").action is None
    assert ask("!wait", context=waiting).action is None  # spectators cannot


def test_not_commands_are_ignored() -> None:
    assert maybe_ask("good luck!") is None
    assert maybe_ask("!help", username="kibitzbot") is None  # our own echo
    assert maybe_ask("!help", username="lichess") is None
    assert maybe_ask("!help", room="team") is None


def test_unknown_and_malformed_commands_get_a_hint_without_echo() -> None:
    for text in ("!foo", "!eval please now", "!pv maybe-later", "!" + "a" * 5000,
                 "!<script>alert(1)</script>", "!help https://evil.example.com",
                 "!\x00\x1b[2J", "!wait\nhttps://x.io"):
        reply = ask(text)
        assert reply.text == UNKNOWN_HINT, text


def test_replies_are_rationed_per_room() -> None:
    now = [0.0]
    responder = CommandResponder(clock=lambda: now[0])
    replies = [maybe_ask("!help", responder=responder)
               for _ in range(MAX_REPLIES_PER_WINDOW + 3)]
    assert sum(r is not None for r in replies) == MAX_REPLIES_PER_WINDOW
    assert maybe_ask("!help", room="player", responder=responder) is not None  # its own budget
    now[0] = 61.0
    assert maybe_ask("!help", responder=responder) is not None


def test_hostile_queue_names_cannot_smuggle_links() -> None:
    context = replace(CONTEXT, queue=("a" * 200, "www.spam.com", "bob"))
    reply = ask("!queue", context=context)
    assert len(reply.text) <= 140 and "www" not in reply.text


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), room=st.sampled_from(["player", "spectator", "x"]),
       username=st.text(max_size=40))
def test_any_line_is_safe(text: str, room: str, username: str) -> None:
    reply = maybe_ask("!" + text, room=room, username=username)
    if reply is not None:
        assert 0 < len(reply.text) <= 140
        assert "http" not in reply.text and "\n" not in reply.text
