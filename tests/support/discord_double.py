"""A local Discord for the real discord.py client: REST under /api/v10 and a gateway WebSocket.

Start it, point discord.py at it (`api_base`, `gateway_url`; the bridge's DISCORD_API_BASE and
DISCORD_GATEWAY_URL), and drive it like the people in a guild would: `slash()`, `click()`,
`submit()` (a modal), `say()` (a message, optionally a reply). It records every REST call
(`calls`), keeps every message as Discord would show it (`messages`, `thread_messages()`), the
bot's reactions and its answers to each interaction (`Ix`), and refuses what Discord refuses
(content over 2,000 characters, empty messages, oversized embeds or components, a second
acknowledgement of an interaction, an acknowledgement after the 3-second deadline). Faults:
`fail()` injects 429s (with `retry_after` and a `Via` header, so discord.py takes them for
Discord's own limits) or other statuses on a route; `gateway.drop()` cuts the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from tests.support import discord_payloads as pl
from tests.support.discord_checks import check_message
from tests.support.discord_gateway import Gateway, Session
from tests.support.discord_interactions import InteractionRoutes, Ix, json_response
from tests.support.discord_payloads import Person, snowflake
from tests.support.waiting import until

TOKEN = "test-bot-token"


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    retry_after: float


Handler = Callable[[web.Request, re.Match[str], Any], Awaitable[Any]]


UPLOADS: web.RequestKey[list[tuple[str, bytes]]] = web.RequestKey("uploads", list)  # a multipart create's files


class DiscordDouble(InteractionRoutes):
    def __init__(self, *, heartbeat_ms: int = 41250) -> None:
        self.app_id, self.guild_id, self.channel_id = snowflake(), snowflake(), snowflake()
        self.bot = Person(snowflake(), "flower", bot=True)
        self.owner = Person(snowflake(), "Owner")
        self.roles = [pl.role(self.guild_id, "@everyone")]
        self.people: dict[int, Person] = {}
        self.channels: dict[int, dict[str, Any]] = {
            self.channel_id: pl.text_channel(self.channel_id, self.guild_id, "general")}
        self.messages: dict[int, dict[str, Any]] = {}
        self.allowed_mentions: dict[int, Any] = {}  # message id -> allowed_mentions sent with its latest version
        self.reactions: list[tuple[str, int, str]] = []  # ("add"/"remove", message id, emoji) by the bot
        self.commands: dict[int | None, list[dict[str, Any]]] = {}  # guild id (None: global) -> commands
        self.interactions: dict[int, Ix] = {}
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.dms_closed: set[int] = set()
        self.files: dict[int, bytes] = {}  # attachment id -> the bytes its CDN link serves
        self.fetched: list[str] = []  # paths of attachment downloads, in order
        self._echoes: set[asyncio.Task[None]] = set()  # people who accept no direct messages from the bot
        self.gateway = Gateway(token=TOKEN, ready=self._ready, guild_create=self._guild_create,
                               on_change=self._changed, heartbeat_ms=heartbeat_ms)
        self.gateway.on_sent = self._delivered
        self.on_call: Callable[[Call], None] | None = None
        self._change = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("GET", re.compile(r"/gateway(/bot)?"), self._get_gateway),
            ("GET", re.compile(r"/users/@me"), self._me),
            ("GET", re.compile(r"/oauth2/applications/@me"), self._app_info),
            ("PUT", re.compile(r"/applications/(\d+)(?:/guilds/(\d+))?/commands"), self._put_commands),
            ("GET", re.compile(r"/applications/(\d+)(?:/guilds/(\d+))?/commands"), self._get_commands),
            ("POST", re.compile(r"/channels/(\d+)/messages"), self._create_message),
            ("GET", re.compile(r"/channels/(\d+)/messages/(\d+)"), self._get_message),
            ("PATCH", re.compile(r"/channels/(\d+)/messages/(\d+)"), self._edit_message),
            ("POST", re.compile(r"/channels/(\d+)/messages/(\d+)/threads"), self._create_thread),
            ("PUT", re.compile(r"/channels/(\d+)/messages/(\d+)/reactions/([^/]+)/@me"), self._react),
            ("DELETE", re.compile(r"/channels/(\d+)/messages/(\d+)/reactions/([^/]+)/@me"), self._unreact),
            ("GET", re.compile(r"/channels/(\d+)"), self._get_channel),
            ("PATCH", re.compile(r"/channels/(\d+)"), self._edit_channel),
            ("POST", re.compile(r"/users/@me/channels"), self._open_dm),
            ("POST", re.compile(r"/interactions/(\d+)/([^/]+)/callback"), self._callback),
            ("POST", re.compile(r"/webhooks/(\d+)/([^/]+)"), self._followup),
            ("GET", re.compile(r"/webhooks/(\d+)/([^/]+)/messages/(@original|\d+)"), self._get_webhook_message),
            ("PATCH", re.compile(r"/webhooks/(\d+)/([^/]+)/messages/(@original|\d+)"), self._edit_webhook_message),
        ]

    # ---- lifecycle --------------------------------------------------------------------------------
    async def start(self) -> DiscordDouble:
        app = web.Application()
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        app.router.add_get("/attachments/{channel}/{aid}/{name}", self._attachment)  # the CDN
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for task in list(self._echoes):
            task.cancel()
        await asyncio.gather(*self._echoes, return_exceptions=True)
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def env(self) -> dict[str, str]:
        return {"DISCORD_TOKEN": TOKEN, "DISCORD_API_BASE": self.api_base, "DISCORD_GATEWAY_URL": self.gateway_url,
                "DISCORD_GUILD_IDS": str(self.guild_id)}

    # ---- people and what they do ---------------------------------------------------------------
    def person(self, name: str, *, roles: tuple[int, ...] = (), bot: bool = False) -> Person:
        for rid in roles:
            if not any(r["id"] == str(rid) for r in self.roles):
                self.roles.append(pl.role(rid, f"role-{rid}", len(self.roles)))
        p = Person(snowflake(), name, [*roles], bot)
        self.people[p.id] = p
        return p

    async def slash(self, person: Person, sub: str, *, channel_id: int | None = None, **options: Any) -> Ix:
        """`/flower <sub> option:value…` typed by `person` in a channel (default: #general) or a thread; `sub`
        may name a group's subcommand: "routine add"."""
        top = next((c for c in self.commands.get(self.guild_id) or self.commands.get(None) or []
                    if c["name"] == "flower"), None)
        if top is None:
            raise AssertionError("the bot has not synced a /flower command")
        group, _, leaf = sub.partition(" ")
        spec = next(o for o in top["options"] if o["name"] == group)
        if leaf:
            spec = next(o for o in spec["options"] if o["name"] == leaf)
        types = {o["name"]: o["type"] for o in spec.get("options", [])}
        unknown = set(options) - set(types)
        if unknown:
            raise AssertionError(f"/flower {sub} has no option(s) {sorted(unknown)}; it has {sorted(types)}")
        opts = [{"name": k, "type": types[k], "value": v} for k, v in options.items() if v is not None]
        called = {"name": leaf or group, "type": 1, "options": opts}
        data = {"id": top["id"], "name": "flower", "type": 1, "guild_id": str(self.guild_id),
                "options": [{"name": group, "type": 2, "options": [called]} if leaf else called]}
        return await self._interact(2, person, self.channels[channel_id or self.channel_id], data)

    async def click(self, person: Person, message_id: int, *, custom_id: str = "", label: str = "",
                    seen: dict[str, Any] | None = None) -> Ix:
        """`person` presses a button of a message, found by custom id or label; `seen`: the message as
        their screen still shows it (a copy taken earlier), for a click on a button already gone."""
        msg = seen if seen is not None else self.messages[message_id]
        button = next((b for row in msg["components"] for b in row.get("components", [])
                       if (custom_id and b.get("custom_id") == custom_id) or (label and b.get("label") == label)),
                      None)
        if button is None:
            raise AssertionError(f"no button {custom_id or label!r} on message {message_id}: {self.labels(msg)}")
        data = {"custom_id": button["custom_id"], "component_type": 2}
        return await self._interact(3, person, self.channels[int(msg["channel_id"])], data, message=msg)

    async def submit(self, person: Person, opened: Ix, values: dict[str, str | bool]) -> Ix:
        """`person` fills the modal the bot opened in answer to `opened` (keys: label text or custom id)."""
        modal = opened.modal
        if modal is None:
            raise AssertionError(f"interaction {opened.id} opened no modal: {opened.callbacks}")
        filled = [self._fill(c, values) for c in modal["components"]]
        data = {"custom_id": modal["custom_id"], "components": filled}
        channel = opened.payload["channel"]
        return await self._interact(5, person, channel, data, message=opened.payload.get("message"))

    async def redeliver(self, ix: Ix) -> None:
        """The same INTERACTION_CREATE once more (a duplicate delivery)."""
        await self.gateway.dispatch("INTERACTION_CREATE", ix.payload)

    def attachment(self, channel_id: int, filename: str, data: bytes, content_type: str = "text/plain", *,
                   size: int | None = None) -> dict[str, Any]:
        """An attachment object as a message carries it; its CDN link serves `data`. `size`: what Discord
        announces (default: the real one)."""
        aid = snowflake()
        self.files[aid] = data
        url = f"http://127.0.0.1:{self.port}/attachments/{channel_id}/{aid}/{filename.replace('/', '%2F')}"
        return {"id": str(aid), "filename": filename, "size": len(data) if size is None else size, "url": url,
                "proxy_url": url, "content_type": content_type}

    async def _attachment(self, request: web.Request) -> web.Response:
        self.fetched.append(request.path)
        data = self.files.get(int(request.match_info["aid"]))
        if data is None:
            return web.Response(status=404, text="gone")
        return web.Response(body=data, content_type="application/octet-stream")

    async def say(self, person: Person, channel_id: int, content: str, *, reply_to: int | None = None,
                  attachments: list[dict[str, Any]] | None = None) -> int:
        """`person` writes a message (a reply when reply_to is given; with `attachments` from
        `attachment()`); its id."""
        mid = snowflake()
        ref = referenced = None
        if reply_to is not None:
            ref = {"message_id": str(reply_to), "channel_id": str(channel_id), "guild_id": str(self.guild_id),
                   "type": 0}
            referenced = self.messages.get(reply_to)
        msg = pl.message(mid, channel_id, self.guild_id, person.user(), {"content": content},
                         member=person.member(with_user=False), reference=ref, referenced=referenced)
        msg["attachments"] = list(attachments or [])
        self.messages[mid] = msg
        await self.gateway.dispatch("MESSAGE_CREATE", msg)
        return mid

    async def _interact(self, kind: int, person: Person, channel: dict[str, Any], data: dict[str, Any],
                        message: dict[str, Any] | None = None) -> Ix:
        iid, token = snowflake(), secrets.token_urlsafe(24)
        payload = pl.interaction(interaction_id=iid, app_id=self.app_id, kind=kind, token=token,
                                 guild_id=self.guild_id, channel=channel, person=person, data=data, message=message)
        ix = self.interactions[iid] = Ix(iid, token, person, payload)
        await self.gateway.dispatch("INTERACTION_CREATE", payload)
        return ix

    @staticmethod
    def _fill(component: dict[str, Any], values: dict[str, str | bool]) -> dict[str, Any]:
        if component["type"] == 1:  # a legacy action row around one text input
            inner = component["components"][0]
            key = inner.get("label", "")
        else:  # a label (type 18) around a text input or a checkbox
            inner, key = component["component"], component.get("label", "")
        value = values.get(key, values.get(inner["custom_id"], "" if inner["type"] == 4 else False))
        filled = {"type": inner["type"], "custom_id": inner["custom_id"], "value": value}
        return {"type": 1, "components": [filled]} if component["type"] == 1 else \
            {"type": 18, "component": filled}

    # ---- reading what the bot did ------------------------------------------------------------------
    def thread_messages(self, channel_id: int) -> list[dict[str, Any]]:
        return [m for m in self.messages.values() if int(m["channel_id"]) == channel_id]

    def bot_messages(self, channel_id: int) -> list[dict[str, Any]]:
        return [m for m in self.thread_messages(channel_id) if m["author"]["id"] == str(self.bot.id)]

    def rest(self, method: str, pattern: str) -> list[Call]:
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.fullmatch(c.path)]

    def reactions_on(self, message_id: int) -> list[str]:
        """The bot's reactions on a message now, oldest first."""
        current: list[str] = []
        for op, mid, emoji in self.reactions:
            if mid != message_id:
                continue
            if op == "add" and emoji not in current:
                current.append(emoji)
            elif op == "remove" and emoji in current:
                current.remove(emoji)
        return current

    @staticmethod
    def text(msg: dict[str, Any]) -> str:
        """A message as a person reads it: content, then each embed's title, description and fields."""
        parts = [msg.get("content") or ""]
        for e in msg.get("embeds", []):
            parts += [e.get("title", ""), e.get("description", "")]
            parts += [f"{f['name']}: {f['value']}" for f in e.get("fields", [])]
        return "\n".join(p for p in parts if p)

    @staticmethod
    def labels(msg: dict[str, Any]) -> list[str]:
        return [b.get("label", "") for row in msg.get("components", []) for b in row.get("components", [])]

    @staticmethod
    def custom_ids(msg: dict[str, Any]) -> list[str]:
        return [b.get("custom_id", "") for row in msg.get("components", []) for b in row.get("components", [])]

    async def until(self, pred: Callable[[DiscordDouble], Any], timeout: float = 60.0) -> Any:
        """Wait for a condition on what the double saw; re-checked after every call and frame."""
        return await until(self._change, lambda: pred(self), timeout)

    def fail(self, method: str, pattern: str, *, status: int = 429, times: int = 1, retry_after: float = 0.05) -> None:
        """The next `times` calls matching method and path regex answer `status` (429: rate limited)."""
        self.faults.append(Fault(method, re.compile(pattern), status, times, retry_after))

    def _changed(self) -> None:
        self._change.set()

    def _delivered(self, frame: dict[str, Any]) -> None:
        if frame["t"] == "INTERACTION_CREATE" and "id" in frame["d"]:  # (a test may send one without)
            ix = self.interactions.get(int(frame["d"]["id"]))
            if ix is not None and ix.sent_at is None:
                ix.sent_at = time.monotonic()

    # ---- gateway payloads --------------------------------------------------------------------------
    def _ready(self, session: Session) -> dict[str, Any]:
        return {"v": 10, "user": self.bot.user(), "guilds": [{"id": str(self.guild_id), "unavailable": True}],
                "session_id": session.id, "resume_gateway_url": self.gateway_url, "private_channels": [],
                "relationships": [], "application": {"id": str(self.app_id), "flags": 1 << 19}, "shard": [0, 1]}

    def _guild_create(self) -> dict[str, Any]:
        texts = [c for c in self.channels.values() if c["type"] == 0]
        threads = [c for c in self.channels.values() if c["type"] == 11]
        return pl.guild(self.guild_id, "Flower test", self.owner, self.bot, self.roles, texts, threads)

    # ---- REST ------------------------------------------------------------------------------------
    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body: Any = None
        if request.content_type.startswith("multipart/"):  # a message with files: payload_json + files[n]
            form = await request.post()
            body = json.loads(str(form.get("payload_json") or "{}"))
            request[UPLOADS] = [(v.filename, v.file.read()) for k, v in form.items()
                                  if k.startswith("files[") and isinstance(v, web.FileField)]
        else:
            raw = await request.read()
            body = json.loads(raw) if raw and request.content_type == "application/json" else None
        call = Call(request.method, path, dict(request.query), body)
        self.calls.append(call)
        try:
            response = await self._route(request, path, body)
        finally:
            self._changed()
            if self.on_call is not None:
                self.on_call(call)
        call.status = response.status
        return response

    async def _route(self, request: web.Request, path: str, body: Any) -> web.Response:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and fault.pattern.fullmatch(path):
                fault.times -= 1
                return self._fault(fault)
        webhook = path.startswith(("/webhooks/", "/interactions/")) or path.startswith("/gateway")
        if not webhook and request.headers.get("Authorization") != f"Bot {TOKEN}":
            return json_response({"message": "401: Unauthorized", "code": 0}, 401)
        for method, rx, handler in self._routes:
            m = rx.fullmatch(path)
            if m and method == request.method:
                result = await handler(request, m, body)
                return result if isinstance(result, web.Response) else json_response(result)
        return json_response({"message": f"404: Not Found ({request.method} {path})", "code": 0}, 404)

    @staticmethod
    def _fault(fault: Fault) -> web.Response:
        if fault.status == 429:
            return json_response({"message": "You are being rate limited.", "retry_after": fault.retry_after,
                          "global": False}, 429, {"Via": "1.1 google", "Retry-After": str(fault.retry_after),
                                                   "X-RateLimit-Scope": "user"})
        return json_response({"message": f"injected {fault.status}", "code": 0}, fault.status)

    async def _get_gateway(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return {"url": self.gateway_url, "shards": 1,
                "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}

    async def _me(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return {**self.bot.user(), "verified": True, "mfa_enabled": False, "flags": 0}

    async def _app_info(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return pl.app_info(self.app_id, self.bot, self.owner)

    async def _put_commands(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        guild = int(m.group(2)) if m.group(2) else None
        stored = [{**c, "id": str(snowflake()), "application_id": str(self.app_id), "version": str(snowflake()),
                   **({"guild_id": str(guild)} if guild else {})} for c in body]
        self.commands[guild] = stored
        return stored

    async def _get_commands(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return self.commands.get(int(m.group(2)) if m.group(2) else None, [])

    def _channel(self, channel_id: int) -> dict[str, Any] | None:
        return self.channels.get(channel_id)

    async def _create_message(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        channel = self._channel(int(m.group(1)))
        if channel is None:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        if (problem := check_message(body)) is not None:
            return json_response(problem, 400)
        if channel["type"] == 1 and int(channel["recipients"][0]["id"]) in self.dms_closed:
            return json_response({"message": "Cannot send messages to this user", "code": 50007}, 403)
        mid = snowflake()
        guild = self.guild_id if channel["type"] != 1 else None
        msg = pl.message(mid, int(channel["id"]), guild, self.bot.user(), body,
                         member=self.bot.member(with_user=False) if guild else None)
        msg["attachments"] = [self.attachment(int(channel["id"]), name, data, "application/octet-stream")
                              for name, data in request.get(UPLOADS, [])]
        self.messages[mid] = msg
        self.allowed_mentions[mid] = body.get("allowed_mentions")
        self._echo("MESSAGE_CREATE", msg)
        return msg

    async def _get_message(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        msg = self.messages.get(int(m.group(2)))
        if msg is None or msg["channel_id"] != m.group(1):
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        return msg

    async def _edit_message(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        msg = self.messages.get(int(m.group(2)))
        if msg is None or msg["channel_id"] != m.group(1):
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        if msg["author"]["id"] != str(self.bot.id):
            return json_response({"message": "Cannot edit a message authored by another user", "code": 50005}, 403)
        merged = {**msg, **{k: v for k, v in body.items() if k in ("content", "embeds", "components", "flags")}}
        if (problem := check_message(merged)) is not None:
            return json_response(problem, 400)
        for key in ("content", "embeds", "components"):
            if key in body:
                msg[key] = body[key] if body[key] is not None else ("" if key == "content" else [])
        msg["edited_timestamp"] = pl.iso()
        self.allowed_mentions[int(msg["id"])] = body.get("allowed_mentions")
        self._echo("MESSAGE_UPDATE", msg)
        return msg

    async def _create_thread(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        parent, mid = int(m.group(1)), int(m.group(2))
        msg = self.messages.get(mid)
        if msg is None or msg["channel_id"] != str(parent):
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        if mid in self.channels:
            return json_response({"message": "A thread has already been created for this message", "code": 160004}, 400)
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 100:
            return json_response({"message": "Invalid Form Body (name)", "code": 50035}, 400)
        thread = pl.thread_channel(mid, parent, self.guild_id, self.bot.id, name,
                                   int(body.get("auto_archive_duration") or 1440))
        self.channels[mid] = thread
        msg["thread"] = thread
        self._echo("THREAD_CREATE", {**thread, "newly_created": True})
        return thread

    async def _react(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return self._reaction("add", m)

    async def _unreact(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        return self._reaction("remove", m)

    def _reaction(self, op: str, m: re.Match[str]) -> web.Response:
        msg = self.messages.get(int(m.group(2)))
        if msg is None or msg["channel_id"] != m.group(1):
            return json_response({"message": "Unknown Message", "code": 10008}, 404)
        self.reactions.append((op, int(m.group(2)), unquote(m.group(3))))
        return web.Response(status=204)

    async def _get_channel(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        channel = self._channel(int(m.group(1)))
        return channel if channel is not None else json_response({"message": "Unknown Channel", "code": 10003}, 404)

    async def _edit_channel(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        channel = self._channel(int(m.group(1)))
        if channel is None:
            return json_response({"message": "Unknown Channel", "code": 10003}, 404)
        if channel["type"] == 11:  # the bot archives or locks a thread it created
            meta = channel["thread_metadata"]
            meta.update({k: bool(body[k]) for k in ("archived", "locked") if k in body})
        if "name" in body:
            channel["name"] = str(body["name"])
        return channel

    async def _open_dm(self, request: web.Request, m: re.Match[str], body: Any) -> Any:
        person = self.people.get(int(body["recipient_id"]))
        if person is None:
            return json_response({"message": "Unknown User", "code": 10013}, 404)
        dm_id = next((int(c["id"]) for c in self.channels.values()
                      if c["type"] == 1 and c["recipients"][0]["id"] == str(person.id)), snowflake())
        self.channels[dm_id] = {"id": str(dm_id), "type": 1, "recipients": [person.user()], "last_message_id": None,
                                "flags": 0}
        return self.channels[dm_id]

    def _echo(self, t: str, d: dict[str, Any]) -> None:
        """The gateway's echo of the bot's own REST call, as Discord sends it: after, and apart from, the
        call's response (in order with the other dispatches: the gateway lock is first come, first served)."""
        async def send(frame: dict[str, Any]) -> None:
            with contextlib.suppress(RuntimeError):  # no session (yet, or any more): nobody to tell
                await self.gateway.dispatch(t, frame)

        task = asyncio.get_running_loop().create_task(send(json.loads(json.dumps(d))))
        self._echoes.add(task)
        task.add_done_callback(self._echoes.discard)
