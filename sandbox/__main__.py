"""`python -m sandbox`: run the sandbox standalone (the options of `kibitz sandbox`)."""

from sandbox.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
