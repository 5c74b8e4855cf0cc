"""`python -m bot.sandbox [--port N]`: run the sandbox standalone."""

from bot.sandbox.server import main

if __name__ == "__main__":
    raise SystemExit(main())
