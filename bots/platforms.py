"""The front ends `flower-bot` can run, in one registry: name -> how to build it from the configuration.

    PLATFORMS["web"].build(cfg)  ->  a Frontend (bots/frontend.py) for the bot to attach and start

The order here is the order of the CLI's flags, of `[surfaces]` and of "choose from …" in errors.
Each builder imports its platform only when that platform is chosen, so a missing Slack or Discord
library (or token) never stands in the way of `flower-bot web`. Adding a platform: write its
`bots/<name>_bot.py` with a `build(cfg)`, and add one `Platform` line below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bots.config import BotConfig
    from bots.frontend import Frontend

__all__ = ["PLATFORMS", "Platform"]


@dataclass(frozen=True)
class Platform:
    name: str  # the CLI's word and `--<name>` flag, the `[surfaces]` key, the ThreadRef.platform it owns
    build: Callable[[BotConfig], Frontend]  # raises ConfigError naming what is missing


def _web(cfg: BotConfig) -> Frontend:
    from bots.web_bot import build

    return build(cfg)


def _slack(cfg: BotConfig) -> Frontend:
    from bots.slack_bot import build

    return build(cfg)


def _discord(cfg: BotConfig) -> Frontend:
    from bots.discord_bot import build

    return build(cfg)


PLATFORMS: dict[str, Platform] = {p.name: p for p in (
    Platform("web", _web),
    Platform("slack", _slack),
    Platform("discord", _discord),
)}
