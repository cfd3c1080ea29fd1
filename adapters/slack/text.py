"""Slack text rules: what may ping, what must be escaped, and small renderings of numbers.

Slack reads `<…>` control sequences in message text: `<@U123>` mentions a user, `<!here>` and
friends ping a channel, `<!subteam^S1>` a user group. The outbox already defuses mass pings
(`adapters.textsplit.neutralize_mentions`); Slack also needs user mentions defused, because agent
text quoting a log or a commit may carry them. The same zero-width space trick is used, so the
text reads the same and code keeps its shape.

Where Slack parses mrkdwn (section fields, fallback `text`, ephemeral replies) `&`, `<` and `>`
are escaped as Slack documents; `markdown` blocks take standard Markdown and get only the defusing.
"""

from __future__ import annotations

import re

from adapters.textsplit import neutralize_mentions

__all__ = ["bar", "defuse", "mrkdwn_escape", "plain", "strip_bot_mention"]

_ZWSP = "\u200b"
# <@U123>, <@W123|name>: user mentions (Discord's <@&role> is handled by neutralize_mentions).
_USER_RE = re.compile(r"<(@[UW][A-Z0-9]+)", re.IGNORECASE)


def defuse(text: str) -> str:
    """No mention in `text` pings anyone: mass pings, user groups and user mentions. Idempotent."""
    return _USER_RE.sub(lambda m: f"<{_ZWSP}{m.group(1)}", neutralize_mentions(text))


def mrkdwn_escape(text: str) -> str:
    """Escape for Slack's mrkdwn: nothing in the result is a control sequence."""
    return defuse(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(text: str, limit: int) -> str:
    """A plain_text field: defused, one line, clipped to `limit` characters."""
    flat = " ".join(defuse(text).split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


_PCT_RE = re.compile(r"\((\d{1,3})%\)")


def bar(context_text: str, cells: int = 10) -> str:
    """'80.2K / 1M (8%)' -> '▰░░░░░░░░░ 80.2K / 1M (8%)'; text without a percentage is returned as is."""
    m = _PCT_RE.search(context_text)
    if not m:
        return context_text
    pct = min(100, int(m.group(1)))
    full = round(pct * cells / 100)
    return "▰" * full + "░" * (cells - full) + " " + context_text


def strip_bot_mention(text: str, bot_user_id: str) -> str:
    """'<@UBOT> build it' -> 'build it' (every mention of the bot itself, anywhere)."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    return text.strip()
