"""Inbound, pure: what a dispatch must hold before a handler reads it, and the intent it carries.

```
option_problem(command, data)     a slash command's option values against its parameters' types
message_problem(message)          a MESSAGE_CREATE that is no one's message
is_person_message(message)        a person's words or files (not a bot, a webhook, a system message)
reply_to_of(message)              the message it replies to ("" for none)
stop_form_intent(run, text, end)  the Stop form's submission: Stop, or Interrupt with the words
```

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

from adapters.hub import Interrupt, Stop

__all__ = ["is_person_message", "message_problem", "option_problem", "reply_to_of", "stop_form_intent"]

_PERSON_MESSAGES = (discord.MessageType.default, discord.MessageType.reply)
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


def is_person_message(message: discord.Message) -> bool:
    """A person's message with words or files in it (bots, webhooks and system messages are not)."""
    if message.author.bot or message.webhook_id is not None or message.type not in _PERSON_MESSAGES:
        return False
    return bool(message.content.strip() or message.attachments)


def reply_to_of(message: discord.Message) -> str:
    ref = message.reference
    return str(ref.message_id) if ref is not None and ref.message_id is not None else ""


def stop_form_intent(run_id: str, text: str, end: bool) -> Stop | Interrupt:
    """"End the run for good" ticked: a Stop; else an Interrupt with the words (empty: just stop and go on)."""
    return Stop(run_id) if end else Interrupt(run_id, text)
