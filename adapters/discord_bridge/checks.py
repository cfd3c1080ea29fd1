"""What a dispatch must hold before a handler reads it: checks that say what is wrong, in words.

discord.py trusts Discord: an option's value reaches the command as sent (a word where `asks` wants a
whole number), and a MESSAGE_CREATE missing a part it treats as optional (`author` with no `member`)
becomes a `Message` without that attribute. Bad input of either kind is turned away here with one
sentence (a person's ephemeral reply, or one log line), before any handler trips over it.
"""

from __future__ import annotations

import math
from typing import Any

import discord
from discord import app_commands
from discord.enums import AppCommandOptionType

__all__ = ["message_problem", "option_problem"]

_GROUPS = (AppCommandOptionType.subcommand.value, AppCommandOptionType.subcommand_group.value)


def _fits(kind: AppCommandOptionType, value: Any) -> str | None:
    """None when `value` is what an option of `kind` carries, else what it should have been."""
    if kind is AppCommandOptionType.integer:
        return None if isinstance(value, int) and not isinstance(value, bool) else "a whole number"
    if kind is AppCommandOptionType.number:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return None if ok else "a number"
    if kind is AppCommandOptionType.string:
        return None if isinstance(value, str) else "text"
    if kind is AppCommandOptionType.boolean:
        return None if isinstance(value, bool) else "true or false"
    return None  # users, channels, attachments…: discord.py resolves those itself


def option_problem(command: Any, data: Any) -> str | None:
    """What is wrong with a slash command's option values, checked against the command's own parameter
    types (never the types the payload claims), or None."""
    if not isinstance(command, app_commands.Command) or not isinstance(data, dict):
        return None
    options = data.get("options") or []
    while isinstance(options, list) and options and isinstance(options[0], dict) and \
            options[0].get("type") in _GROUPS:  # down to the subcommand's own options
        options = options[0].get("options") or []
    if not isinstance(options, list):
        return "its options are not a list"
    for option in options:
        if not isinstance(option, dict) or not isinstance(option.get("name"), str):
            return "an option has no name"
        # Payloads name an option as Discord shows it (a renamed parameter's display name, not its Python name).
        param = next((p for p in command.parameters if p.display_name == option["name"]), None)
        if param is None:
            return f"`{option['name'][:40]}` is not one of its options"
        want = _fits(param.type, option.get("value"))
        if want is not None:
            return f"`{param.display_name}` must be {want}"
    return None


def message_problem(message: discord.Message) -> str | None:
    """What a parsed message lacks that a person's message always has, or None."""
    author = getattr(message, "author", None)
    if author is None:
        return "no 'author'"
    if isinstance(author, discord.Member) and getattr(author, "guild", None) is None:
        return "an author of a server this bot is not in"
    if not isinstance(getattr(message, "content", None), str):
        return "'content' is not text"
    return None
