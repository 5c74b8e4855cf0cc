"""A local Lichess-compatible server for tests and the demo."""
