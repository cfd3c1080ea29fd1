"""Probes for `run_surface_conformance`: each platform's side as a person sees it, read from that
platform's double (Slack, Discord), its own store (the web page is the platform) or the memory
surface's record — never from the surface's internals."""

from __future__ import annotations

import html
import itertools
import re
import sqlite3
from collections.abc import Sequence
from typing import Any

from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.platform.testing import Fault, Seen
from adapters.web.surface import WebSurface
from tests.support.discord_double import DiscordDouble
from tests.support.slack_double import Msg, SlackDouble

_ZWSP = "\u200b"
_threads = itertools.count(1)
# Mass pings written plainly ("@here"): a ZWSP after the "@" defuses them.
_BARE_MASS = re.compile(r"(?<![\w\u200b])@(everyone|here|channel)\b", re.IGNORECASE)


def _visible(text: str) -> str:
    return text.replace(_ZWSP, "")


class MemoryProbe:
    """The memory surface records what it shows; `storm()` plays a 429."""

    def __init__(self, surface: MemorySurface, users: Sequence[str] = ("ana", "bea")) -> None:
        self.surface, self.users = surface, tuple(users)
        self.thread = ThreadRef(surface.name, "c1", f"t{next(_threads)}")

    async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
        posted = self.surface.messages.get(message_id)
        if posted is None or posted.thread != thread:
            return None
        msg = posted.msg
        text = "\n".join([msg.title, msg.text, *(f"{k}: {v}" for k, v in msg.fields)])
        return Seen(text, tuple((b.label, b.action_id) for b in msg.buttons))  # nothing here notifies anyone

    async def shown(self, thread: ThreadRef) -> int:
        return len(self.surface.thread(thread))

    async def told(self, user: str) -> list[str]:
        return self.surface.notices_for(user)

    async def remove(self, thread: ThreadRef, message_id: str) -> None:
        del self.surface.messages[message_id]

    def fail(self, fault: Fault, retry_after: float) -> bool:
        if fault != "rate_limited":
            return False
        self.surface.storm(10**6, retry_after)
        return True

    def heal(self) -> None:
        self.surface.storm(0)

    def private(self, thread: ThreadRef) -> str | None:
        return thread.channel.removeprefix("dm-") if thread.channel.startswith("dm-") else None


class WebProbe:
    """The web page keeps its messages in its own store: a person sees what `changes()` gives the
    page, and ephemeral lines reach the pages watching the thread. One person uses the page."""

    users = ("web",)

    def __init__(self, surface: WebSurface) -> None:
        self.surface = surface
        self.thread = ThreadRef("web", "page", f"t{next(_threads)}")
        self.watcher = surface.watch()  # the page that shows this thread
        self.watcher.threads.add(str(self.thread))

    async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
        row = next((m for m in self.surface.changes(thread) if m["id"] == message_id), None)
        if row is None:
            return None
        text = "\n".join([row["title"], row["text"], *(f"{k}: {v}" for k, v in row["fields"])])
        return Seen(text, tuple((b["label"], b["action_id"]) for b in row["buttons"]))  # the page pings nobody

    async def shown(self, thread: ThreadRef) -> int:
        return len(self.surface.changes(thread))

    async def told(self, user: str) -> list[str]:
        return [n["text"] for n in self.watcher.notices] if user == "web" else []

    async def remove(self, thread: ThreadRef, message_id: str) -> None:
        self.surface.db.execute("DELETE FROM messages WHERE id = ? AND thread = ?", (message_id, str(thread)))

    def fail(self, fault: Fault, retry_after: float) -> bool:
        if fault != "refused":  # we are the platform: no rate limit, no outage apart from our own store
            return False
        self.surface.db.set_authorizer(lambda *_: sqlite3.SQLITE_DENY)  # the store refuses every statement
        return True

    def heal(self) -> None:
        self.surface.db.set_authorizer(None)

    def private(self, thread: ThreadRef) -> str | None:
        return None

    def close(self) -> None:
        self.surface.unwatch(self.watcher)


_SLACK_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_SLACK_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")
_SLACK_GROUP = re.compile(r"<!subteam\^([A-Z0-9]+)(?:\|[^>]*)?>")


class SlackProbe:
    """A thread under a person's message in the Slack double; Slack's mention syntax decides pings."""

    users = ("U0000ANA", "U0000BEA")
    # What the surface calls; a fault answers all of them.
    METHODS = ("chat.postMessage", "chat.update", "chat.postEphemeral", "conversations.open", "reactions.add",
               "reactions.remove")

    def __init__(self, double: SlackDouble, channel: str = "C0000001") -> None:
        self.double = double
        root = double.person_says(channel, "Let's see what the bot does here.", user=self.users[0])
        self.thread = ThreadRef("slack", channel, root.ts)

    def _msg(self, thread: ThreadRef, ts: str) -> Msg | None:
        msg = self.double.messages.get((thread.channel, ts))
        if msg is None or msg.deleted:
            return None
        if thread.thread and ts != thread.thread and msg.thread_ts != thread.thread:
            return None
        return msg

    async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
        msg = self._msg(thread, message_id)
        if msg is None:
            return None
        parts = [msg.header()] + ([msg.text] if msg.versions and not msg.blocks and msg.display else [])  # streamed
        for block in msg.blocks:
            if block.get("type") == "markdown":
                parts.append(block["text"])
            elif block.get("type") == "context":
                parts += [e.get("text", "") for e in block.get("elements", [])]
            elif block.get("type") == "section":
                parts += [(block.get("text") or {}).get("text", ""), *(f["text"] for f in block.get("fields") or [])]
        raw = "\n".join(p for p in parts if p)
        buttons = tuple((b["text"]["text"], b["action_id"]) for b in msg.buttons())
        return Seen(_visible(html.unescape(raw)), buttons, self._pings("\n".join([raw, msg.text])))

    @staticmethod
    def _pings(raw: str) -> frozenset[str]:
        found = {f"user:{m}" for m in _SLACK_USER.findall(raw)}
        found |= {f"@{m}" for m in _SLACK_SPECIAL.findall(raw)}
        found |= {f"group:{m}" for m in _SLACK_GROUP.findall(raw)}
        found |= {f"@{m.lower()}" for m in _BARE_MASS.findall(raw)}
        return frozenset(found)

    async def shown(self, thread: ThreadRef) -> int:
        if thread.thread:
            return len(self.double.thread(thread.channel, thread.thread))
        return len(self.double.roots(thread.channel))

    async def told(self, user: str) -> list[str]:
        return [str(t) for t in self.double.ephemerals_for(user)]

    async def remove(self, thread: ThreadRef, message_id: str) -> None:
        self.double.messages[(thread.channel, message_id)].deleted = True

    def fail(self, fault: Fault, retry_after: float) -> bool:
        status, error = {"rate_limited": (429, "ratelimited"), "unavailable": (503, ""),
                         "refused": (200, "channel_not_found")}[fault]
        for method in self.METHODS:
            self.double.fail(method, 1000, status=status, retry_after=round(retry_after), error=error)
        return True

    def heal(self) -> None:
        self.double.heal()

    def private(self, thread: ThreadRef) -> str | None:
        return self.double.dms.get(thread.channel)


_DISCORD_USER = re.compile(r"<@!?(\d+)>")
_DISCORD_ROLE = re.compile(r"<@&(\d+)>")


class DiscordProbe:
    """A run-style thread (opened from a starter message of the bot's) in the Discord double; who is
    notified follows Discord's rules: mentions in content only, filtered by the message's allowed_mentions."""

    # What the surface calls: messages (post, edit) and opening a DM; a fault answers all of them.
    ROUTES = (("POST", r"/channels/\d+/messages"), ("PATCH", r"/channels/\d+/messages/\d+"),
              ("POST", r"/users/@me/channels"))

    def __init__(self, double: DiscordDouble, thread: ThreadRef, users: Sequence[str]) -> None:
        self.double, self.thread, self.users = double, thread, tuple(users)

    def _msg(self, thread: ThreadRef, message_id: str) -> dict[str, Any] | None:
        msg = self.double.messages.get(int(message_id)) if message_id.isdigit() else None
        if msg is None or msg["channel_id"] not in {thread.channel, thread.thread}:
            return None
        return msg

    async def read(self, thread: ThreadRef, message_id: str) -> Seen | None:
        msg = self._msg(thread, message_id)
        if msg is None:
            return None
        buttons = tuple((b.get("label", ""), b.get("custom_id", "")) for row in msg.get("components", [])
                        for b in row.get("components", []))
        return Seen(_visible(DiscordDouble.text(msg)), buttons, self._pings(msg))

    def _pings(self, msg: dict[str, Any]) -> frozenset[str]:
        allowed = self.double.allowed_mentions.get(int(msg["id"]))
        parse = {"everyone", "users", "roles"} if allowed is None else set(allowed.get("parse") or [])
        users = set() if allowed is None else set(allowed.get("users") or [])
        roles = set() if allowed is None else set(allowed.get("roles") or [])
        content = msg.get("content") or ""  # embeds never notify anyone
        found = {f"@{m.lower()}" for m in _BARE_MASS.findall(content) if m.lower() != "channel"
                 and "everyone" in parse}
        found |= {f"user:{u}" for u in _DISCORD_USER.findall(content) if "users" in parse or u in users}
        found |= {f"role:{r}" for r in _DISCORD_ROLE.findall(content) if "roles" in parse or r in roles}
        return frozenset(found)

    async def shown(self, thread: ThreadRef) -> int:
        return len(self.double.thread_messages(int(thread.thread or thread.channel)))

    async def told(self, user: str) -> list[str]:
        dms = {cid for cid, c in self.double.channels.items() if c["type"] == 1 and c["recipients"][0]["id"] == user}
        return [DiscordDouble.text(m) for m in self.double.messages.values() if int(m["channel_id"]) in dms]

    async def remove(self, thread: ThreadRef, message_id: str) -> None:
        del self.double.messages[int(message_id)]

    def fail(self, fault: Fault, retry_after: float) -> bool:
        # discord.py sleeps through 5xx other than 503 and through 429s shorter than its timeout itself.
        status = {"rate_limited": 429, "unavailable": 503, "refused": 403}[fault]
        for method, path in self.ROUTES:
            self.double.fail(method, path, status=status, times=1000, retry_after=retry_after)
        return True

    def heal(self) -> None:
        self.double.faults.clear()

    def private(self, thread: ThreadRef) -> str | None:
        channel = self.double.channels.get(int(thread.channel)) if thread.channel.isdigit() else None
        return str(channel["recipients"][0]["id"]) if channel is not None and channel["type"] == 1 else None
