"""The Discord bridge on discord.py: `/flower` commands, one thread per run, buttons that survive restarts.

Parts: `surface` (neutral messages -> embeds, persistent buttons, reactions), `inbound` and
`commands` (clicks, forms, thread messages, slash commands -> hub intents), `client` (intents,
tree, listeners) and `bridge` (the front end the bot process starts and stops).
"""

from adapters.discord_bridge.bridge import INTENT_HINT, DiscordBridge, DiscordSettings, DiscordStartError
from adapters.discord_bridge.client import FlowerClient
from adapters.discord_bridge.surface import DiscordSurface

__all__ = ["INTENT_HINT", "DiscordBridge", "DiscordSettings", "DiscordStartError", "DiscordSurface", "FlowerClient"]
