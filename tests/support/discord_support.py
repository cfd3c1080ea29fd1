"""Fixtures for the Discord tests: the double, a bridge (real discord.py client) connected to it, a hub."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.discord_bridge import DiscordFrontend, DiscordSettings
from adapters.hub import Hub, RunFactory, RunPlan
from adapters.platform import DISCORD
from adapters.state import StateStore
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from tests.support.discord_double import TOKEN, DiscordDouble
from tests.support.hub_support import make_hub


@pytest.fixture
async def discord_double() -> AsyncIterator[DiscordDouble]:
    double = await DiscordDouble(heartbeat_ms=1000).start()
    yield double
    await double.stop()


# Discord paces a channel at about one post a second; the tests care about order and loss, not pace.
FAST_LIMITS = dataclasses.replace(DISCORD, post_per_s=50.0, post_burst=20, update_per_min=3000.0, update_burst=20)


def option_flow() -> RunFactory:
    """One step that asks, honouring the run's options (`/flower run … timeout: asks:`)."""
    def factory(plan: RunPlan) -> Workflow:
        ch = HumanChannel(timeout_s=plan.timeout_s if plan.timeout_s is not None else 60.0, max_asks=plan.max_asks)
        spec = AgentSpec(name="asker", allowed_tools=["Read"], channel=ch, max_turns=12)
        return Workflow([Step("ask", spec, f"ask: {plan.task}")], channel=ch)
    return factory


def settings(double: DiscordDouble, **kw: Any) -> DiscordSettings:
    kw.setdefault("guild_ids", [double.guild_id])
    kw.setdefault("gateway_url", double.gateway_url)
    kw.setdefault("token", TOKEN)
    return DiscordSettings(api_base=double.api_base, ready_timeout=0.05, **kw)


async def start_bot(double: DiscordDouble, tmp_path: Path, md: Any, cli_home: Path, store: StateStore,
                    **hub_kw: Any) -> tuple[DiscordFrontend, Hub]:
    """A bridge on the double and a hub on the model double, wired the way the bot process wires them."""
    bridge = DiscordFrontend(settings(double))
    bridge.surface.limits = FAST_LIMITS
    hub = make_hub(tmp_path, md, cli_home, bridge.surface, store, **hub_kw)  # type: ignore[arg-type]
    bridge.attach(hub)
    await bridge.start()
    return bridge, hub


async def stop_bot(bridge: DiscordFrontend, hub: Hub) -> None:
    await hub.close()
    await bridge.stop()


def message_with(double: DiscordDouble, channel_id: int, needle: str) -> dict[str, Any] | None:
    """The bot's message in a channel whose text holds `needle` (the first one)."""
    return next((m for m in double.bot_messages(channel_id) if needle in double.text(m)), None)


def open_card(double: DiscordDouble, channel_id: int, question: str) -> dict[str, Any] | None:
    msg = message_with(double, channel_id, question)
    return msg if msg is not None and msg["components"] else None


def settled_card(double: DiscordDouble, channel_id: int, question: str) -> dict[str, Any] | None:
    msg = message_with(double, channel_id, question)
    return msg if msg is not None and not msg["components"] and msg["embeds"][0]["title"].startswith(("✅", "🚫",
                                                                                                       "✖️")) else None
