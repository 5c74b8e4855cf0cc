"""The one rule for whether a token may play, and the one reading of the account's answers."""

from __future__ import annotations

import pytest

from bot.lichess.account import AccountError, account_info, describe, play_problems

URL = "https://lichess.example"
BOT_ACCOUNT = {"id": "kibitz", "username": "Kibitz", "title": "BOT"}


def test_a_bot_account_with_bot_play_may_play() -> None:
    info = account_info(URL, "tok", {"tok": {"scopes": "bot:play,challenge:read"}}, BOT_ACCOUNT)
    assert (info.user_id, info.username, info.is_bot) == ("kibitz", "Kibitz", True)
    assert play_problems(info) == [] and info.can_play


def test_each_problem_is_named_with_what_to_do() -> None:
    info = account_info(URL, "tok", {"tok": {"scopes": "board:play"}},
                        {"id": "alice", "username": "Alice"})
    scope, title = play_problems(info)
    assert "lacks the bot:play scope (it has: board:play)" in scope
    assert "Alice is not a BOT account" in title and "`kibitz upgrade`" in title
    assert not info.can_play
    assert describe(info)[2:] == [f"problem: {scope}", f"problem: {title}"]


def test_a_server_without_token_test_leaves_only_the_title_to_judge() -> None:
    info = account_info(URL, "tok", None, BOT_ACCOUNT)
    assert info.scopes is None and info.can_play


def test_an_unknown_token_is_rejected() -> None:
    with pytest.raises(AccountError, match="rejected the token"):
        account_info(URL, "tok", {"tok": None}, BOT_ACCOUNT)
