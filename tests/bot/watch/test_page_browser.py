"""The status page in a real browser (Debian's chromium, driven by Selenium through
chromium-driver) while two sandbox games run: cards, boards and clocks; a PV and the eval
graph updated live, with no reload; a hostile chat line shown as text, never run.

`make chromium` installs the browser; where none can be had the test skips. The screenshot
goes to the test's tmp dir, and also to $KIBITZ_WATCH_SCREENSHOT when that is set.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.watch.server import Watch, WatchSettings
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    UNBUDGETED,
    UNLIMITED,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
    strong_opponent,
    wait_for,
)
from tests.bot.watch.test_watch_e2e import HOSTILE, say

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="Debian's chromium and chromium-driver are not installed (`make chromium`)")
# Chromium in a container, offline and quiet: no sandbox (no user namespaces), no GPU, no
# calls home.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,1000")
PHONE_WINDOW = (400, 860)
CLOCK = re.compile(r"^(white|black) \d+:\d{2}(\.\d)?(:\d{2})?$")


@pytest.fixture
def browser() -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="kibitz-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(options=options,
                                  service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"chromium does not start here: {exc.msg}")
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


async def until(driver: Any, condition: Callable[[Any], Any]) -> Any:
    """An explicit WebDriverWait, off the loop (the bot and the sandbox run on it)."""
    wait = WebDriverWait(driver, GUARD_S, poll_frequency=0.1)
    return await asyncio.to_thread(wait.until, condition)


def card(driver: Any, game_id: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'.card[data-game="{game_id}"]')


def text_of(driver: Any, game_id: str, selector: str) -> str:
    return str(card(driver, game_id).find_element(By.CSS_SELECTOR, selector).text)


def eval_points(driver: Any, game_id: str) -> int:
    line = card(driver, game_id).find_element(By.CSS_SELECTOR, "svg.eval .line")
    return int(line.get_attribute("data-points") or 0)


async def test_two_games_live_in_a_browser(tmp_path: Path, browser: Any) -> None:
    quiet_logs()
    config = make_config(tmp_path, concurrency=2)
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        token = server.add_account(BOT, bot=True)
        watch = Watch(WatchSettings("127.0.0.1", 0, None), base_url=server.url, token=token)
        async with running_bot(server, config, token=token, timings=UNBUDGETED,
                               watch=watch) as run:
            await asyncio.to_thread(browser.get, f"http://127.0.0.1:{watch.port}/")
            await until(browser, lambda d: d.find_element(By.ID, "feed").text == "live")
            # Alice plays on her own, slowly enough to outlast the test; Mallory is the test.
            await server.start_opponent(
                "alice", engine=strong_opponent(), movetime_s=0.2,
                challenge=ChallengeSpec(BOT, 300, 3, repeat=False))
            alice_game = await server.wait_for_game("alice")
            mallory = server.add_account("mallory", bot=False)
            game_id = await server.challenge("mallory", BOT, 300, 3, color="white")
            await wait_for(lambda: server.lobby.challenges[game_id].status == "accepted")
            await server.wait_for_game("mallory")
            await play(server, mallory, game_id, "e2e4", 2)

            # Both cards, each with a board and two clocks.
            await until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".card")) == 2)
            for gid in (alice_game, game_id):
                await until(browser, lambda d: (card(d, gid).find_element(  # noqa: B023
                    By.CSS_SELECTOR, ".board img").get_attribute("src") or "")
                    .startswith("data:image/svg+xml"))
                for clock in (".clock.top", ".clock.bottom"):
                    await until(browser, lambda d:
                                CLOCK.match(text_of(d, gid, clock)))  # noqa: B023
            await until(browser, lambda d: text_of(d, game_id, ".pv")
                        and eval_points(d, game_id) >= 1)
            first_pv, first_points = text_of(browser, game_id, ".pv"), eval_points(browser,
                                                                                   game_id)
            # Mallory's clock runs now: the page ticks it down with no message from the bot.
            ticking = text_of(browser, game_id, ".clock.running")
            await until(browser, lambda d: text_of(d, game_id, ".clock.running") != ticking)

            # A hostile line, then a move: the new PV and a longer graph arrive by themselves.
            await say(server, mallory, game_id, HOSTILE)
            await play(server, mallory, game_id, "d2d4", 4)
            await until(browser, lambda d: eval_points(d, game_id) > first_points
                        and text_of(d, game_id, ".pv") != first_pv)
            await until(browser, lambda d: HOSTILE in text_of(d, game_id, ".chat"))
            assert browser.title == "Kibitz"  # the onerror never ran
            assert not browser.find_elements(By.CSS_SELECTOR, ".chat img, .chat script")
            assert token not in browser.page_source
            assert text_of(browser, game_id, ".opponent").startswith("vs mallory")
            assert "connected" in browser.find_element(By.ID, "event-stream").text

            shot = tmp_path / "watch.png"
            browser.save_screenshot(str(shot))
            assert shot.stat().st_size > 10_000
            if target := os.environ.get("KIBITZ_WATCH_SCREENSHOT"):
                shutil.copyfile(shot, target)
            # A phone's width: one column, nothing wider than the screen.
            await asyncio.to_thread(browser.set_window_size, *PHONE_WINDOW)
            await until(browser, lambda d: d.execute_script(
                "return document.documentElement.scrollWidth <= window.innerWidth"))
            browser.save_screenshot(str(tmp_path / "watch-phone.png"))
            assert await post_as(server, mallory, f"/api/board/game/{game_id}/resign") == 200
            await run.done_with([game_id])
            # The finished card stays, with its result and its PGN link.
            await until(browser, lambda d: "win" in text_of(d, game_id, ".result"))
            pgn = card(browser, game_id).find_element(By.CSS_SELECTOR, ".pgn")
            assert (pgn.get_attribute("href") or "").endswith(f"/game/export/{game_id}")


async def play(server: SandboxServer, token: str, game_id: str, uci: str, plies: int) -> None:
    """Mallory's move, then the bot's answer."""
    assert await post_as(server, token, f"/api/board/game/{game_id}/move/{uci}") == 200
    await wait_for(lambda: len(server.game_record(game_id).moves) >= plies)
