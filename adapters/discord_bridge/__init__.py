"""The Discord bridge on discord.py: `/flower` commands, one thread per run, buttons that survive restarts.

Parts: `surface` (neutral messages -> embeds, persistent buttons, reactions), `inbound` and
`commands` (clicks, forms, thread messages, slash commands -> hub intents), `render` (neutral
messages -> embeds and components), `context` (`DiscordContext`, what every handler shares),
`client` (intents, tree, listeners) and `frontend` (`DiscordFrontend`, the front end the bot process
starts and stops); the limits are in `adapters.platform.limits`.
"""

from adapters.discord_bridge.client import FlowerClient
from adapters.discord_bridge.frontend import INTENT_HINT, DiscordFrontend, DiscordSettings, DiscordStartError
from adapters.discord_bridge.surface import DiscordSurface

__all__ = ["INTENT_HINT", "DiscordFrontend", "DiscordSettings", "DiscordStartError", "DiscordSurface", "FlowerClient"]
