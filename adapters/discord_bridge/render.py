"""OutMessage -> what discord.py sends: plain content or one embed, and a View of persistent buttons.

A message with a title or fields (status card, ask card, oracle, summary) becomes an embed; the
rest (prose, notices, receipt lines) is plain content, already Discord Markdown and already cut at
2,000 characters by the outbox. Every button is an `ActionButton`: a `DynamicItem` whose template
is the project's id codec, so discord.py routes a click on any message that carries one — even a
message posted by an earlier process, before a restart — to the bridge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import discord
from discord import ui

from adapters.ids import ID_PATTERN
from adapters.platform import DISCORD, Button, OutMessage

__all__ = ["NO_MENTIONS", "SUBAGENT_WARNING", "ActionButton", "Rendered", "buttons_view", "context_bar", "render"]

# Agent text never pings anyone: no @everyone/@here, roles, users, nor the author of a replied message.
NO_MENTIONS = discord.AllowedMentions.none()
# Said under an interrupt's outcome.
SUBAGENT_WARNING = "\nA subagent in flight loses its half-done work. To end the run for good: `/flower end`."

STYLES = {"default": discord.ButtonStyle.secondary, "primary": discord.ButtonStyle.primary,
          "danger": discord.ButtonStyle.danger}
LABEL_MAX, BUTTONS_MAX, FIELDS_MAX = DISCORD.button_label_max, DISCORD.buttons_max, DISCORD.fields_max
TITLE_MAX, DESCRIPTION_MAX, FOOTER_MAX = DISCORD.title_max, DISCORD.description_max, DISCORD.footer_max
FIELD_NAME_MAX, FIELD_VALUE_MAX = DISCORD.field_name_max, DISCORD.field_value_max

# The icon a neutral title starts with -> the embed's colour (green done, red failed, grey closed...).
COLOURS: dict[str, int] = {
    "✅": 0x2ECC71, "❌": 0xE74C3C, "⏹️": 0x95A5A6, "✖️": 0x95A5A6, "🚫": 0x95A5A6, "💤": 0x607D8B,
    "❓": 0x5865F2, "⏳": 0x3498DB, "▶️": 0x3498DB, "⏸️": 0xE67E22, "⌛": 0xE67E22, "🧮": 0xE67E22,
    "⚠️": 0xF1C40F, "🔮": 0x9B59B6,
}
_PERCENT = re.compile(r"\((\d{1,3})%\)")


class ActionHandler(Protocol):
    async def on_button(self, interaction: discord.Interaction[Any], action_id: str) -> None: ...
    def fresh(self, interaction: discord.Interaction[Any]) -> bool: ...


def _handler(interaction: discord.Interaction[Any]) -> ActionHandler:
    handler: ActionHandler = getattr(interaction.client, "actions")  # noqa: B009 (the bridge's client has one)
    return handler


class ActionButton(ui.DynamicItem[ui.Button[Any]], template=ID_PATTERN):
    """A button carrying an `adapters.ids` action id as its custom_id."""

    def __init__(self, action_id: str, label: str = "…",
                 style: discord.ButtonStyle = discord.ButtonStyle.secondary) -> None:
        super().__init__(ui.Button(label=_clip(label, LABEL_MAX) or "…", style=style, custom_id=action_id))
        self.action_id = action_id

    @classmethod
    async def from_custom_id(cls, interaction: discord.Interaction[Any], item: ui.Item[Any],
                             match: re.Match[str], /) -> ActionButton:
        button = item if isinstance(item, ui.Button) else None
        return cls(match.string, (button.label or "…") if button else "…",
                   button.style if button else discord.ButtonStyle.secondary)

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return _handler(interaction).fresh(interaction)  # a second delivery of the same click does nothing

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        await _handler(interaction).on_button(interaction, self.action_id)


@dataclass(frozen=True)
class Rendered:
    content: str | None
    embed: discord.Embed | None
    view: ui.View | None

    def send_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"allowed_mentions": NO_MENTIONS}
        if self.content is not None:
            kw["content"] = self.content
        if self.embed is not None:
            kw["embed"] = self.embed
        if self.view is not None:
            kw["view"] = self.view
        return kw

    def edit_kwargs(self) -> dict[str, Any]:
        # Every part is given, so an edit also removes what the new version no longer has.
        return {"content": self.content, "embeds": [self.embed] if self.embed is not None else [],
                "view": self.view, "allowed_mentions": NO_MENTIONS}


def buttons_view(buttons: list[Button]) -> ui.View | None:
    """Up to `BUTTONS_MAX` buttons, five to a row, in order; None when there are none."""
    if not buttons:
        return None
    view = ui.View(timeout=None)
    for b in buttons[:BUTTONS_MAX]:
        view.add_item(ActionButton(b.action_id, b.label, STYLES.get(b.style, discord.ButtonStyle.secondary)))
    return view


def render(msg: OutMessage, *, footer: str = "") -> Rendered:
    view = buttons_view(msg.buttons)
    if not (msg.title or msg.fields):
        return Rendered(msg.text if msg.text.strip() else "…", None, view)
    embed = discord.Embed(title=_clip(msg.title, TITLE_MAX) or None,
                          description=_clip(msg.text, DESCRIPTION_MAX) or None, colour=_colour(msg))
    for name, value in msg.fields[:FIELDS_MAX]:
        if name == "Context":
            value = f"{value}\n{context_bar(value)}" if context_bar(value) else value
        embed.add_field(name=_clip(name, FIELD_NAME_MAX) or "\u200b", value=_clip(value, FIELD_VALUE_MAX) or "—",
                        inline=True)
    if footer:
        embed.set_footer(text=_clip(footer, FOOTER_MAX))
    return Rendered(None, embed, view)


def context_bar(value: str, width: int = 10) -> str:
    """"80.2K / 1M (8%)" -> "▰▱▱▱▱▱▱▱▱▱"; "" when the level is unknown."""
    m = _PERCENT.search(value)
    if m is None:
        return ""
    filled = min(width, round(int(m.group(1)) * width / 100))
    return "▰" * filled + "▱" * (width - filled)


# OutMessage.tone, where the view sets one (a run's ending sets one on its summary and final status card:
# adapters/view/endings.py).
TONE_COLOURS = {"warning": 0xE67E22, "danger": 0xE74C3C, "success": 0x2ECC71, "muted": 0x95A5A6, "info": 0x3498DB}


def _colour(msg: OutMessage) -> int | None:
    tone = getattr(msg, "tone", "")
    if tone in TONE_COLOURS:
        return TONE_COLOURS[tone]
    if msg.kind == "ask" and msg.buttons:
        return COLOURS["❓"]
    title = msg.title.lstrip()
    return next((c for icon, c in COLOURS.items() if title.startswith(icon)), None)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
