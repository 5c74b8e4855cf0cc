"""Small JSON files in the state directory: read leniently, replaced atomically."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def load_state(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; {} (with a warning) if it is missing, unreadable or not
    an object, so a damaged file costs remembered state, never the bot's start."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("state file %s unreadable (%s); starting afresh", path, exc)
        return {}
    if not isinstance(raw, dict):
        log.warning("state file %s is not a JSON object; starting afresh", path)
        return {}
    return raw


def save_state(path: Path, data: dict[str, Any]) -> None:
    """Write `data` to `path` atomically (a reader never sees half a file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        log.warning("cannot write state file %s: %s", path, exc)


def number(raw: object, default: float = 0.0) -> float:
    """A JSON number read back leniently (bools and junk give the default)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return default
    return float(raw)
