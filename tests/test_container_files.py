"""Containerfile and compose.yaml: what the image and its compose service promise.

Building the image takes minutes and podman (`make test-container`); these checks read the
files only, so a change to the bot's defaults that the container files must follow (a port,
the grace period, a secret's name) fails here at once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.app import LEAVE_TIMEOUT_S
from bot.engines.pool import QUIT_TIMEOUT_S
from bot.ops.config import Config, WatchConfig
from bot.ops.token import CREDENTIAL_NAME, TOKEN_ENV
from bot.watch.server import PASSWORD_ENV, PASSWORD_SECRET

ROOT = Path(__file__).resolve().parents[1]
# Seconds for the rest of a stop beyond the named deadlines (closing sessions, exiting).
STOP_SLACK_S = 5


def instructions() -> list[tuple[str, str]]:
    """The Containerfile's instructions (continuation lines joined), comments left out."""
    joined = re.sub(r"\\\n\s*", " ", (ROOT / "Containerfile").read_text())
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def only(keyword: str) -> str:
    values = [rest for kw, rest in final_stage() if kw == keyword]
    assert len(values) == 1, f"{keyword}: {values}"
    return values[0]


@pytest.fixture(scope="module")
def bot() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service: dict[str, Any] = compose["services"]["bot"]
    return service


def _seconds(value: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return sum(float(number) * units[unit]
               for number, unit in re.findall(r"(\d+(?:\.\d+)?)([smh])", value))


def test_the_image_runs_the_bot_as_a_user_with_its_config() -> None:
    assert only("USER") not in ("root", "0", "")
    assert json.loads(only("ENTRYPOINT")) == ["kibitz"]
    assert json.loads(only("CMD")) == ["play", "--config", "/etc/kibitz/config.yml"]
    assert only("WORKDIR") == "/var/lib/kibitz"
    assert json.loads(only("VOLUME")) == ["/var/lib/kibitz"]
    assert only("EXPOSE") == str(WatchConfig().port)


def test_the_health_check_asks_the_pages_healthz() -> None:
    healthcheck = only("HEALTHCHECK")
    assert f"http://127.0.0.1:{WatchConfig().port}/healthz" in healthcheck
    assert "curl" not in healthcheck  # not in Debian's slim image


def test_no_secret_is_baked_in() -> None:
    for keyword, rest in instructions():
        if keyword in ("ENV", "ARG"):
            assert TOKEN_ENV not in rest and PASSWORD_ENV not in rest
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*", "the build context must be an allow-list"
    assert all(pattern.startswith(("!", "**/")) for pattern in patterns[1:])


def test_the_image_config_is_the_shipped_one_with_the_page_on_every_address() -> None:
    """The Containerfile's sed replaces the one `host: 127.0.0.1` line of config.yml."""
    lines = (ROOT / "config.yml").read_text().splitlines()
    assert [line.split("#")[0].strip() for line in lines
            if line.startswith("  host: 127.0.0.1 ")] == ["host: 127.0.0.1"]
    assert r"s|^  host: 127\.0\.0\.1 .*$|  host: 0.0.0.0 " in (ROOT / "Containerfile").read_text()


def test_compose_stop_grace_period_covers_the_games_grace(bot: dict[str, Any]) -> None:
    """The worst stop: the grace period, then resigning and waiting, then engines that do
    not quit (as systemd's TimeoutStopSec)."""
    worst_s = Config().game.shutdown_grace_s + LEAVE_TIMEOUT_S + QUIT_TIMEOUT_S + STOP_SLACK_S
    assert _seconds(bot["stop_grace_period"]) >= worst_s


def test_compose_publishes_the_page_on_the_hosts_loopback_only(bot: dict[str, Any]) -> None:
    assert bot["ports"] == [f"127.0.0.1:{WatchConfig().port}:{WatchConfig().port}"]


def test_compose_hands_over_secrets_config_and_state(bot: dict[str, Any]) -> None:
    assert set(bot["secrets"]) == {CREDENTIAL_NAME, PASSWORD_SECRET}
    assert "environment" not in bot  # the token and password only as secrets
    assert "./config.yml:/etc/kibitz/config.yml:ro" in bot["volumes"]
    assert any(volume.endswith(":/var/lib/kibitz") for volume in bot["volumes"])
    assert bot["restart"] == "unless-stopped"
    assert bot["init"] is True
    assert bot["cap_drop"] == ["ALL"]
