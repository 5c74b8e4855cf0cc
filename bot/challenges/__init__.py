"""Who the bot plays: the challenge rules (pure functions), what it knows of its opponents,
online block lists, and matchmaking (challenging other bots when idle)."""
