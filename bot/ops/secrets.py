"""Secrets handed to a container as files (Docker's and Podman's `secrets:`).

Compose and `docker run --secret` mount each secret read-only at /run/secrets/<name>; the bot
looks there for what it would otherwise take from the environment or a named file.
"""

from __future__ import annotations

from pathlib import Path

CONTAINER_SECRETS_DIR = Path("/run/secrets")


def container_secret(name: str, secrets_dir: Path = CONTAINER_SECRETS_DIR) -> Path | None:
    """The file of the secret `name`, when the container was given one."""
    path = secrets_dir / name
    return path if path.is_file() else None
