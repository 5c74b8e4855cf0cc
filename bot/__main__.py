"""`python -m bot`: the same command line as `kibitz`."""

from bot.cli import main

if __name__ == "__main__":
    main()
