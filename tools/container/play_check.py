"""Inside the image: `kibitz play` against the sandbox, the image's health check, and SIGTERM.

tools/container/test.sh runs this with `buildah run` in a working container of the image
(only the standard library and the image's own commands are used). The bot plays with the
image's configuration (the page on 0.0.0.0:8740, its password from the secret); once it is
ready the image's HEALTHCHECK command must pass; once a game starts the bot gets SIGTERM,
as from `docker stop`, and must let the game end and exit 0. Exits non-zero naming what
failed; prints how long the stop took (the number behind stop_grace_period).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

CONFIG = "/etc/kibitz/config.yml"
SANDBOX_CLOCK = "1+1"  # the sandbox opponent challenges with this clock again and again
READY_LINE = "ready: accepting challenges"
GAME_START = " starts against "
STOPPING_LINE = "stopping: 1 games may finish"


def sandbox_url_and_token(sandbox: subprocess.Popen[str]) -> tuple[str, str]:
    """The sandbox's URL and the bot account's token, from the lines it prints at start."""
    assert sandbox.stdout is not None
    url = token = ""
    for line in sandbox.stdout:
        words = line.split()
        if words[:1] == ["url:"]:
            url = words[1]
        elif words[:2] == ["token:", "kibitz"]:
            token = words[2]
        if url and token:
            return url, token
    raise SystemExit("the sandbox ended before printing its URL and the bot's token")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--healthcheck", required=True,
                        help="the image's HEALTHCHECK test as JSON, e.g. [\"CMD\", ...]")
    healthcheck = json.loads(parser.parse_args().healthcheck)
    if healthcheck[:1] != ["CMD"]:
        raise SystemExit(f"expected an exec-form HEALTHCHECK, got {healthcheck}")
    sandbox = subprocess.Popen(["kibitz", "sandbox", "--port", "0", "--challenge", SANDBOX_CLOCK],
                               stdout=subprocess.PIPE, text=True)
    try:
        url, token = sandbox_url_and_token(sandbox)
        env = dict(os.environ, LICHESS_BOT_TOKEN=token)
        bot = subprocess.Popen(["kibitz", "play", "--config", CONFIG, "--url", url,
                                "--log-level", "info"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env)
        assert bot.stderr is not None
        healthy = stopping = False
        term_at_s: float | None = None
        for line in bot.stderr:
            print(f"  | {line.rstrip()}")
            if READY_LINE in line and not healthy:
                check = subprocess.run(healthcheck[1:], check=False)
                print(f"health check: exit {check.returncode}")
                if check.returncode != 0:
                    bot.kill()
                    return 1
                healthy = True
            elif GAME_START in line and term_at_s is None:
                print("a game started: SIGTERM to the bot")
                bot.send_signal(signal.SIGTERM)
                term_at_s = time.monotonic()
            stopping = stopping or STOPPING_LINE in line
        code = bot.wait()
    finally:
        sandbox.terminate()
        sandbox.wait()
    if term_at_s is None:
        print("the bot ended before a game started")
        return 1
    print(f"stopped {time.monotonic() - term_at_s:.1f} s after SIGTERM, exit code {code}")
    if not stopping:
        print(f"the bot did not let its game run on after SIGTERM ({STOPPING_LINE!r})")
        return 1
    return 0 if healthy and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
