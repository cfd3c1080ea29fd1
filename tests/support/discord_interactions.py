"""The Discord double's interaction routes: the bot's answers to INTERACTION_CREATE.

POST /interactions/{id}/{token}/callback (the first answer: a message, a deferral, an update of the
clicked message or a modal; refused when late or a second time, as Discord does), webhook
follow-ups, and reads and edits of the original response. Each interaction's answers are kept on
its `Ix`, so a test reads what the person was shown.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support import discord_payloads as pl
from tests.support.discord_checks import check_message, check_modal
from tests.support.discord_payloads import Person, snowflake

__all__ = ["DEADLINE_S", "EPHEMERAL", "InteractionRoutes", "Ix", "json_response"]

EPHEMERAL = 64
DEADLINE_S = 3.0  # Discord's window for the first answer to an interaction


@dataclass
class Ix:
    """One interaction the double delivered, and everything the bot answered to it."""

    id: int
    token: str
    person: Person
    payload: dict[str, Any]
    sent_at: float | None = None
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    original: dict[str, Any] | None = None
    followups: list[dict[str, Any]] = field(default_factory=list)
    modal: dict[str, Any] | None = None
    late: bool = False  # the bot answered after the deadline (Discord refused it)

    @property
    def acked(self) -> bool:
        return bool(self.callbacks)

    def texts(self) -> list[str]:
        """What the person was shown: the original response and follow-ups, content and embeds."""
        out = []
        for msg in ([self.original] if self.original else []) + self.followups:
            out += [t for t in [msg.get("content", "")] + [e.get("description", "") for e in msg["embeds"]] if t]
        return out



class InteractionRoutes:
    """Mixed into DiscordDouble, which owns these attributes."""

    interactions: dict[int, Ix]
    messages: dict[int, dict[str, Any]]
    guild_id: int
    app_id: int
    bot: Person

    def _ix(self, iid: int, token: str) -> Ix | None:
        ix = self.interactions.get(iid)
        return ix if ix is not None and ix.token == token else None

    async def _callback(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        ix = self._ix(int(m.group(1)), m.group(2))
        if ix is None:
            return json_response({"message": "Unknown interaction", "code": 10062}, 404)
        if ix.callbacks:
            return json_response({"message": "Interaction has already been acknowledged.", "code": 40060}, 400)
        if ix.sent_at is None or time.monotonic() - ix.sent_at > DEADLINE_S:
            ix.late = True
            return json_response({"message": "Unknown interaction", "code": 10062}, 404)
        kind, data = body["type"], body.get("data") or {}
        if kind == 9 and (problem := check_modal(data)) is not None:
            return json_response(problem, 400)
        if kind in (4, 7) and (problem := check_message(data)) is not None:
            return json_response(problem, 400)
        ix.callbacks.append(body)
        resource: dict[str, Any] = {"type": kind}
        flags = int(data.get("flags") or 0)
        if kind in (4, 5):
            channel_id = int(ix.payload["channel"]["id"])
            ix.original = pl.message(snowflake(), channel_id, self.guild_id, self.bot.user(),
                                     {**data, "flags": flags | (128 if kind == 5 else 0)},
                                     webhook_id=self.app_id)
            resource["message"] = ix.original
        elif kind == 7:
            target = self.messages[int(ix.payload["message"]["id"])]
            for key in ("content", "embeds", "components"):
                if key in data:
                    target[key] = data[key]
            resource["message"] = target
        elif kind == 9:
            ix.modal = data
        return {"interaction": {"id": str(ix.id), "type": ix.payload["type"],
                                "response_message_id": ix.original["id"] if ix.original else None,
                                "response_message_loading": kind == 5,
                                "response_message_ephemeral": bool(flags & EPHEMERAL)},
                "resource": resource}

    async def _followup(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        ix = self._by_token(m.group(2))
        if ix is None or not ix.callbacks:
            return json_response({"message": "Unknown Webhook", "code": 10015}, 404)
        if (problem := check_message(body)) is not None:
            return json_response(problem, 400)
        msg = pl.message(snowflake(), int(ix.payload["channel"]["id"]), self.guild_id, self.bot.user(), body,
                         webhook_id=self.app_id)
        ix.followups.append(msg)
        if not int(body.get("flags") or 0) & EPHEMERAL:
            self.messages[int(msg["id"])] = msg
        return msg

    async def _get_webhook_message(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        ix = self._by_token(m.group(2))
        msg = self._webhook_message(ix, m.group(3))
        return msg if msg is not None else json_response({"message": "Unknown Message", "code": 10008}, 404)

    async def _edit_webhook_message(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        ix = self._by_token(m.group(2))
        msg = self._webhook_message(ix, m.group(3))
        if msg is None:
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        merged = {**msg, **{k: v for k, v in body.items() if k in ("content", "embeds", "components")}}
        if (problem := check_message(merged)) is not None:
            return json_response(problem, 400)
        msg.update({k: v for k, v in merged.items() if k in ("content", "embeds", "components")})
        msg["flags"] = int(msg.get("flags") or 0) & ~128  # no longer "thinking"
        return msg

    def _by_token(self, token: str) -> Ix | None:
        return next((ix for ix in self.interactions.values() if ix.token == token), None)

    @staticmethod
    def _webhook_message(ix: Ix | None, which: str) -> dict[str, Any] | None:
        if ix is None:
            return None
        if which == "@original":
            return ix.original
        return next((f for f in ix.followups if f["id"] == which), None)



def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # discord.py parses a body as JSON only when Content-Type is exactly application/json.
    return web.Response(body=json.dumps(obj).encode(), status=status,
                        headers={"Content-Type": "application/json", **(headers or {})})
