"""Where the Lichess API token comes from, and how it is shown (masked, always).

Sources, first found wins:
1. the environment variable LICHESS_BOT_TOKEN;
2. the file named by the config key `token_file`;
3. the systemd credential `$CREDENTIALS_DIRECTORY/lichess-token` (LoadCredential=);
4. the container secret `/run/secrets/lichess-token` (compose's or `docker run`'s secrets).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.ops.secrets import CONTAINER_SECRETS_DIR, container_secret

TOKEN_ENV = "LICHESS_BOT_TOKEN"
CREDENTIAL_NAME = "lichess-token"
# Lichess tokens: letters, digits and underscores; their length may grow (accept 512+).
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_]+$")
MAX_TOKEN_LENGTH = 4096
# How many leading characters a masked token keeps ("lip_" says which kind it is).
MASK_KEEP_CHARS = 4

log = logging.getLogger(__name__)


class TokenError(Exception):
    """No usable token; the message says where we looked or what is wrong (never the token)."""


def mask_token(token: str) -> str:
    """The token as it may be printed: its first few characters and stars."""
    if len(token) <= 2 * MASK_KEEP_CHARS:
        return "*" * 8
    return token[:MASK_KEEP_CHARS] + "*" * 8


@dataclass(frozen=True)
class Token:
    """A token and where it came from; printing it shows only the masked form."""

    value: str = field(repr=False)
    source: str

    def __str__(self) -> str:
        return f"{mask_token(self.value)} (from {self.source})"

    def __repr__(self) -> str:
        return f"Token({mask_token(self.value)!r}, source={self.source!r})"


def check_token_format(value: str, source: str) -> str:
    """The token with surrounding whitespace removed, or TokenError naming the source."""
    token = value.strip()
    if not token:
        raise TokenError(f"{source}: the token is empty")
    if len(token) > MAX_TOKEN_LENGTH:
        raise TokenError(f"{source}: the token is {len(token)} characters long, more than "
                         f"{MAX_TOKEN_LENGTH}; is this the right file?")
    if not TOKEN_PATTERN.match(token):
        raise TokenError(f"{source}: a Lichess token has only letters, digits and _ "
                         f"(this one has other characters, or several lines)")
    return token


def _read_token_file(path: Path, source: str, *, private: bool = True) -> str:
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TokenError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TokenError(f"{source}: cannot be read: {error}") from None
    if private and mode & (stat.S_IRGRP | stat.S_IROTH):
        log.warning("%s: other users can read this token file; chmod 600 it", source)
    return check_token_format(text, source)


def resolve_token(token_file: Path | None, environ: Mapping[str, str] | None = None,
                  secrets_dir: Path = CONTAINER_SECRETS_DIR) -> Token:
    """The token from the first source that has one (see the module doc)."""
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return Token(check_token_format(env[TOKEN_ENV], TOKEN_ENV), TOKEN_ENV)
    if token_file is not None:
        source = f"token_file {token_file}"
        return Token(_read_token_file(token_file, source), source)
    credentials = env.get("CREDENTIALS_DIRECTORY")
    if credentials:
        path = Path(credentials) / CREDENTIAL_NAME
        if path.exists():
            source = f"systemd credential {path}"
            return Token(_read_token_file(path, source), source)
    secret = container_secret(CREDENTIAL_NAME, secrets_dir)
    if secret is not None:
        source = f"container secret {secret}"
        # Secrets are often mounted 0444; inside the container no other user reads them.
        return Token(_read_token_file(secret, source, private=False), source)
    raise TokenError(
        f"no Lichess API token: set {TOKEN_ENV}, or name a file in the config key token_file, "
        f"or (under systemd) LoadCredential={CREDENTIAL_NAME}:<file>, or (in a container) "
        f"the secret {secrets_dir / CREDENTIAL_NAME}. Create a token with the "
        "bot:play scope at https://lichess.org/account/oauth/token/create?scopes[]=bot:play")
