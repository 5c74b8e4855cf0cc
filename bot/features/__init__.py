"""What the config can switch on in a game: move sources asked before the engine (opening
books, Syzygy tablebases, online services), chat commands, and PGN
records; `wiring` plugs the configured ones into the game hooks."""
