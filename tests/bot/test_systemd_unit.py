"""systemd/kibitz.service: the directives that matter, comments, and systemd's own checks."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli import ExitCode
from bot.ops.config import Config
from bot.ops.token import CREDENTIAL_NAME

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "kibitz.service"
# The exposure `systemd-analyze security` may give at most ("OK" or better).
MAX_EXPOSURE = 2.0
# Seconds for the rest of a stop beyond the named deadlines (closing sessions, exiting).
STOP_SLACK_S = 5


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Sections with their directives in order (a key may repeat, as systemd allows)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"directive outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"not a directive: {line}"
        current.append((key.strip(), value.strip()))
    return sections


def _seconds(value: str) -> float:
    units = {"": 1, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", value):
        total += float(number) * units[unit]
    return total


@pytest.fixture(scope="module")
def service() -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for key, value in parse_unit(UNIT.read_text())["Service"]:
        directives.setdefault(key, []).append(value)
    return directives


def test_notify_watchdog_and_restart(service: dict[str, list[str]]) -> None:
    assert service["Type"] == ["notify"]
    assert _seconds(service["WatchdogSec"][0]) >= 10
    assert service["Restart"] == ["on-failure"]
    prevented = {int(code) for code in service["RestartPreventExitStatus"][0].split()}
    assert prevented == {ExitCode.CONFIG, ExitCode.TOKEN}
    assert service["KillMode"] == ["mixed"], "SIGTERM must reach the bot, not its engines"
    assert "play" in service["ExecStart"][0].split()


def test_start_timeout_leaves_room_for_the_first_compile(
        service: dict[str, list[str]]) -> None:
    from bot.engines.pool import START_TIMEOUT_S, WARM_UP_TIMEOUT_S

    assert _seconds(service["TimeoutStartSec"][0]) > WARM_UP_TIMEOUT_S + START_TIMEOUT_S


def test_stop_timeout_leaves_room_for_the_grace_period(service: dict[str, list[str]]) -> None:
    """The worst stop: the grace period, then resigning and waiting (one deadline), then
    engines that do not quit."""
    from bot.app import LEAVE_TIMEOUT_S
    from bot.engines.pool import QUIT_TIMEOUT_S

    grace_s = Config().game.shutdown_grace_s
    worst_s = grace_s + LEAVE_TIMEOUT_S + QUIT_TIMEOUT_S + STOP_SLACK_S
    assert _seconds(service["TimeoutStopSec"][0]) >= worst_s


def test_user_directories_and_credential(service: dict[str, list[str]]) -> None:
    assert service["DynamicUser"] == ["yes"]
    assert service["StateDirectory"] == ["kibitz"]
    assert service["CacheDirectory"] == ["kibitz"]
    assert "NUMBA_CACHE_DIR=%C/kibitz" in service["Environment"]
    assert service["LoadCredential"][0].startswith(f"{CREDENTIAL_NAME}:/")
    assert not any("LICHESS_BOT_TOKEN" in value for value in service["Environment"])


@pytest.mark.parametrize(("key", "value"), [
    ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
    ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("ProtectKernelTunables", "yes"),
    ("ProtectKernelModules", "yes"), ("ProtectKernelLogs", "yes"),
    ("ProtectControlGroups", "yes"), ("ProtectClock", "yes"), ("ProtectHostname", "yes"),
    ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"), ("RestrictNamespaces", "yes"),
    ("LockPersonality", "yes"), ("SystemCallArchitectures", "native"),
    ("CapabilityBoundingSet", ""), ("UMask", "0077"),
    # numba's JIT writes code and then runs it: this one must stay off.
    ("MemoryDenyWriteExecute", "no"),
])
def test_hardening(service: dict[str, list[str]], key: str, value: str) -> None:
    assert service[key] == [value]


def test_system_call_filter(service: dict[str, list[str]]) -> None:
    assert service["SystemCallFilter"][0] == "@system-service"


def test_every_service_directive_is_commented() -> None:
    """Each paragraph of [Service] directives starts with a comment saying why."""
    in_service = False
    paragraph_commented = False
    for line in UNIT.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            in_service = stripped == "[Service]"
            paragraph_commented = False
        elif not stripped:
            paragraph_commented = False
        elif stripped.startswith("#"):
            paragraph_commented = True
        elif in_service:
            assert paragraph_commented, f"no comment above: {stripped}"


def _systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
    return tool


def test_systemd_rates_the_unit_ok() -> None:
    tool = _systemd_analyze()
    result = subprocess.run([tool, "security", "--offline=yes", "--no-pager", str(UNIT)],
                            capture_output=True, text=True, timeout=60, check=False)
    if "--offline" in result.stderr and "unrecognized" in result.stderr:
        pytest.skip("this systemd-analyze has no --offline (systemd < 250)")
    match = re.search(r"Overall exposure level for kibitz\.service: (\d+\.\d+)",
                      result.stdout + result.stderr)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= MAX_EXPOSURE


def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    tool = _systemd_analyze()
    # verify insists that ExecStart exists: point it at a program that does.
    true = shutil.which("true") or "/bin/true"
    text = UNIT.read_text().replace("/opt/kibitz/.venv/bin/kibitz", true)
    copy = tmp_path / "kibitz.service"
    copy.write_text(text)
    result = subprocess.run([tool, "verify", str(copy)], capture_output=True, text=True,
                            timeout=60, check=False)
    problems = [line for line in (result.stdout + result.stderr).splitlines()
                if "kibitz.service" in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr
