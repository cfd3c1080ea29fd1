"""Discord: the real discord.py against the Discord double (tests/support/discord_double.py)."""
