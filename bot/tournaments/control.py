"""The control directory: how `kibitz tournament join|withdraw|list` reaches the service.

`<state_dir>/tournaments/requests/` holds one small JSON file per command; the running
service reads and removes them every second, and writes what it knows of its arenas to
`<state_dir>/tournaments/status.json`, which `kibitz tournament list` shows.

Why files, not a loopback endpoint: the command and the service already share the state
directory (the service's own, under systemd too), so nothing new is opened to other local
users or processes, no port is chosen or collides, and a request written while the service
is down is simply picked up when it starts. Each request is written to a temporary name and
renamed, so the service never reads half a file.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bot.ops.config import parse_arena_id

log = logging.getLogger(__name__)

ACTIONS: Final = ("join", "withdraw")
STATUS_FILE: Final = "status.json"


@dataclass(frozen=True)
class TournamentCommand:
    action: str  # join | withdraw
    arena_id: str
    team: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> TournamentCommand:
        if not isinstance(raw, dict) or raw.get("action") not in ACTIONS:
            raise ValueError(f"a request needs an action ({', '.join(ACTIONS)}), got {raw!r}")
        arena_id = parse_arena_id(str(raw.get("id", "")))
        extra = {k: raw.get(k) for k in ("team", "password")}
        for key, value in extra.items():
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key} must be a text, got {value!r}")
        return cls(raw["action"], arena_id, extra["team"], extra["password"])


class ControlDir:
    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "tournaments"
        self.requests = self.root / "requests"
        self._published: str | None = None  # what status.json holds, written on change only

    # --- the command's side ------------------------------------------------------------------

    def submit(self, command: TournamentCommand) -> Path:
        self.requests.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{os.getpid()}"
        temporary = self.requests / f".{name}.tmp"
        body = {"action": command.action, "id": command.arena_id,
                **({"team": command.team} if command.team else {}),
                **({"password": command.password} if command.password else {})}
        # Readable by the service, which may run as another user (a password lies here
        # only until the service takes the request, within a second).
        temporary.write_text(json.dumps(body))
        final = self.requests / f"{name}.json"
        temporary.rename(final)
        return final

    def status(self) -> list[dict[str, Any]] | None:
        """The service's last word on its arenas; None if it never wrote one."""
        try:
            data = json.loads((self.root / STATUS_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ValueError(f"{self.root / STATUS_FILE} cannot be read: {exc}") from None
        return data if isinstance(data, list) else None

    # --- the service's side ------------------------------------------------------------------

    def take(self) -> list[TournamentCommand]:
        """The requests written since the last call, oldest first; each file is removed."""
        try:
            files = sorted(self.requests.glob("*.json"))
        except OSError:
            return []
        commands = []
        for path in files:
            try:
                commands.append(TournamentCommand.parse(json.loads(path.read_text())))
            except (OSError, ValueError) as exc:
                log.warning("tournament request %s ignored: %s", path.name, exc)
            finally:
                try:
                    path.unlink()
                except OSError as exc:
                    log.warning("cannot remove the tournament request %s: %s", path, exc)
        return commands

    def publish(self, arenas: list[dict[str, Any]]) -> None:
        """Write status.json when what it says changed (the service calls this every
        second)."""
        text = json.dumps(arenas, indent=1)
        if text == self._published:
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            temporary = self.root / f".{STATUS_FILE}.tmp"
            temporary.write_text(text)
            temporary.replace(self.root / STATUS_FILE)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.root / STATUS_FILE, exc)
            return
        self._published = text
