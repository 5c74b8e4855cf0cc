"""Who the bot plays: a challenge's terms (`terms`) and the whole judgement (`judging`), both
pure functions; the real-time slots and their one busy rule (`slots`); the queue of incoming
challenges (`queue`); what the bot knows of its opponents (`opponents`); online block lists
(`blocklists`); and matchmaking, challenging other bots when idle (`matchmaking`)."""
