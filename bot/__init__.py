"""Kibitz bot: an asyncio Lichess Bot API service."""
