"""The MCP tools the model sees (``ask``, ``inbox``, ``share``) on an in-process server named "human"."""

from __future__ import annotations

from typing import Any, Protocol

from claude_agent_sdk import create_sdk_mcp_server, tool

import flower_core.human.texts as texts
from flower_core.human.ask import Ask
from flower_core.human.mail import Mail
from flower_core.human.share import SHARE_DESCRIPTION, SHARE_SCHEMA
from flower_core.lang import Catalogue, catalogue

ASK_DESCRIPTION = (
    "Ask the human a question and wait for the reply. Use it only for decisions you cannot make "
    "yourself (requirements, preferences, permissions). Offer `options` when the choice is closed. "
    "If nobody answers you get a note telling you how to go on; do not ask the same thing again."
)
INBOX_DESCRIPTION = (
    "Check the inbox: things the human said on their own during the run (changed or added "
    "requirements). Never blocks; says so at once when empty. Check it at natural checkpoints."
)

# Loose on purpose beyond the basic types: emptiness, duplicates and the option count are checked by
# the channel, which answers the model with what was wrong instead of a bare schema error.
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "One concrete question the human can answer directly."},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": f"Optional choices, at most {texts.MAX_OPTIONS}.",
        },
    },
    "required": ["question"],
}
INBOX_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _content(text: str, *, is_error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        out["is_error"] = True
    return out


def inbox_reply(taken: list[Mail], lang: Catalogue | None = None) -> str:
    """What the inbox tool answers: the delivered mail in order, or a one-line note when empty (in ``lang``,
    the seed's by default)."""
    said = catalogue(lang)
    if not taken:
        return said["inbox.empty"]
    body = "\n".join(f"[{m.id}] {m.text}" for m in taken)
    tail = "\n\n" + said["inbox.amended"] if any(m.amended for m in taken) else ""
    return f"{said['inbox.header']}\n\n{body}{tail}"


class ModelSide(Protocol):
    """What the model's tools call on their channel (a HumanChannel)."""

    SERVER_NAME: str
    lang: Catalogue

    async def ask_outcome(self, question: str, options: list[str] | None = None) -> Ask: ...

    def take_mail(self) -> list[Mail]: ...

    def share_file(self, path: str, note: str) -> tuple[str, bool]: ...


def build_server(channel: ModelSide) -> Any:
    """A fresh McpSdkServerConfig whose tools call into `channel`."""

    @tool("ask", ASK_DESCRIPTION, ASK_SCHEMA)
    async def ask(args: dict[str, Any]) -> dict[str, Any]:
        settled = await channel.ask_outcome(args.get("question", ""), args.get("options"))
        return _content(settled.reply, is_error=settled.state == "invalid")

    @tool("inbox", INBOX_DESCRIPTION, INBOX_SCHEMA)
    async def inbox(args: dict[str, Any]) -> dict[str, Any]:
        return _content(inbox_reply(channel.take_mail(), channel.lang))

    @tool("share", SHARE_DESCRIPTION, SHARE_SCHEMA)
    async def share_file(args: dict[str, Any]) -> dict[str, Any]:
        reply, failed = channel.share_file(str(args.get("path") or ""), str(args.get("note") or ""))
        return _content(reply, is_error=failed)

    return create_sdk_mcp_server(channel.SERVER_NAME, tools=[ask, inbox, share_file])
