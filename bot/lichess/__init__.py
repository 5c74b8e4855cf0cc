"""Talking to Lichess: the HTTP client (every Lichess path lives there), its error types, the
typed records of what the streams send, and the one-shot account calls of the command line."""
