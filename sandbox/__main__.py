"""`python -m sandbox [--port N]`: run the sandbox standalone."""

from sandbox.server import main

if __name__ == "__main__":
    raise SystemExit(main())
