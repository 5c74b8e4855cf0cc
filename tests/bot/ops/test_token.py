"""Token sources, format checks and masking."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.ops.token import TOKEN_ENV, Token, TokenError, mask_token, resolve_token

SECRET = "lip_Sup3rSecretValue_123"


def test_the_environment_comes_first(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("lip_fromfile\n")
    token = resolve_token(token_file, {TOKEN_ENV: f"  {SECRET}\n"})
    assert token == Token(SECRET, TOKEN_ENV)


def test_token_file_then_credential(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n")
    token_file.chmod(0o600)
    assert resolve_token(token_file, {}).value == SECRET
    credentials = tmp_path / "creds"
    credentials.mkdir()
    (credentials / "lichess-token").write_text("lip_fromcredential")
    (credentials / "lichess-token").chmod(0o400)
    token = resolve_token(None, {"CREDENTIALS_DIRECTORY": str(credentials)})
    assert token.value == "lip_fromcredential"
    assert token.source == f"systemd credential {credentials / 'lichess-token'}"


def test_a_readable_token_file_is_warned_about(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(SECRET)
    token_file.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        resolve_token(token_file, {})
    assert "other users can read this token file" in caplog.text
    assert SECRET not in caplog.text


def test_no_token_says_where_it_looked() -> None:
    with pytest.raises(TokenError) as caught:
        resolve_token(None, {})
    message = str(caught.value)
    assert TOKEN_ENV in message and "token_file" in message and "LoadCredential" in message


@pytest.mark.parametrize(("content", "problem"), [
    ("", "the token is empty"),
    ("lip_abc def", "only letters, digits and _"),
    ("lip_abc\nlip_def", "only letters, digits and _"),
    ("lip_" + "a" * 5000, "more than 4096"),
])
def test_bad_tokens_are_refused_without_showing_them(tmp_path: Path, content: str,
                                                     problem: str) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(content)
    token_file.chmod(0o600)
    with pytest.raises(TokenError) as caught:
        resolve_token(token_file, {})
    assert problem in str(caught.value)
    assert str(token_file) in str(caught.value)
    if content:
        assert content not in str(caught.value)


def test_missing_token_file(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="no such file"):
        resolve_token(tmp_path / "absent", {})


def test_masking_never_shows_the_token() -> None:
    assert mask_token(SECRET) == "lip_********"
    assert mask_token("short") == "********"
    token = Token(SECRET, TOKEN_ENV)
    for shown in (str(token), repr(token), f"{token}", str([token])):
        assert SECRET not in shown
        assert "lip_********" in shown


def test_a_container_secret_comes_last_and_may_be_world_readable(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "lichess-token").write_text(SECRET + "\n")
    (secrets / "lichess-token").chmod(0o444)  # how Docker mounts a secret by default
    with caplog.at_level(logging.WARNING):
        token = resolve_token(None, {}, secrets_dir=secrets)
    assert token == Token(SECRET, f"container secret {secrets / 'lichess-token'}")
    assert caplog.text == ""
    credentials = tmp_path / "creds"
    credentials.mkdir()
    (credentials / "lichess-token").write_text("lip_fromcredential")
    assert resolve_token(None, {"CREDENTIALS_DIRECTORY": str(credentials)},
                         secrets_dir=secrets).value == "lip_fromcredential"
    assert resolve_token(None, {TOKEN_ENV: "lip_fromenv"}, secrets_dir=secrets).value \
        == "lip_fromenv"


def test_no_container_secret_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(TokenError, match=r"in a container\) the secret .*/lichess-token"):
        resolve_token(None, {}, secrets_dir=tmp_path)
    (tmp_path / "lichess-token").write_text("lip_abc def")
    with pytest.raises(TokenError, match=r"container secret .*only letters, digits and _"):
        resolve_token(None, {}, secrets_dir=tmp_path)
