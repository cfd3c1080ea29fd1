"""A Slack double on 127.0.0.1: the Web API methods the bot calls and a Socket Mode WebSocket.

The real slack-sdk/slack-bolt code connects to it through `SLACK_API_URL` (= `double.api_url`):
`apps.connections.open` answers with a ws:// URL on this same server, the socket sends `hello`,
then whatever envelopes a test sends, and records the bot's acks. Every Web API call is recorded
(`calls`) and applied to a small model of the workspace (`messages`, reactions, ephemerals, views,
agent session statuses), so a test reads the channel as a person would. Blocks and modals outside
Slack's documented Block Kit limits are refused as Slack refuses them (slack_blocks.py: invalid_blocks).

Helpers build the payloads Slack sends — slash commands, clicks on the buttons of posted messages,
modal submissions, message shortcuts, Events API events (a person's message is stored first, so
reactions on it work) — and return the bot's ack. Faults: `fail(method, times, status=429,
retry_after=…)` makes the next calls of a method fail the way Slack does (429 + Retry-After, 5xx, or
an `{"ok": false}` error code).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.support.slack_blocks import message_problem, view_problem
from tests.support.waiting import until

BOT_USER, BOT_ID, TEAM, APP = "UBOT", "BBOT", "T0001", "A0001"
BOT_TOKEN, APP_TOKEN = "xoxb-double-bot", "xapp-double-app"


@dataclass
class ApiCall:
    method: str
    args: dict[str, Any]
    at: float  # time.perf_counter() (the clock the model double stamps requests with)
    status: int = 200  # what the double answered (429, 500, 200 with ok false...)
    error: str = ""


GET_METHODS = frozenset({"users.info"})  # Slack's Web API also answers these over GET, as slack-sdk sends them


@dataclass
class Msg:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str = ""
    user: str = BOT_USER
    bot: bool = True
    versions: int = 1
    deleted: bool = False
    streaming: bool = False  # chat.startStream opened it, chat.stopStream not yet closed it
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # task_update chunks by id, latest
    plan: str = ""  # the last plan_update title
    display: str = ""  # task_display_mode

    def buttons(self) -> list[dict[str, Any]]:
        return [e for b in self.blocks if b.get("type") == "actions" for e in b.get("elements", [])]

    def header(self) -> str:
        return next((b["text"]["text"] for b in self.blocks if b.get("type") == "header"), "")

    def body(self) -> str:
        """The markdown block's text, else the context lines."""
        md = [b["text"] for b in self.blocks if b.get("type") == "markdown"]
        if md:
            return "\n".join(md)
        return "\n".join(e.get("text", "") for b in self.blocks if b.get("type") == "context"
                         for e in b.get("elements", []))

    def fields(self) -> list[str]:
        return [f["text"] for b in self.blocks if b.get("type") == "section" for f in b.get("fields") or []]

    def as_payload(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks,
                             "user": self.user}
        if self.bot:
            d["bot_id"] = BOT_ID
        if self.thread_ts:
            d["thread_ts"] = self.thread_ts
        return d


@dataclass
class Fault:
    status: int = 429
    retry_after: int | None = 1  # Slack sends whole seconds
    error: str = "ratelimited"


class SlackDouble:
    def __init__(self, *, names: dict[str, str] | None = None, sessions_error: str = "",
                 echo_bot_messages: bool = False, streams: bool = True) -> None:
        self.names = dict(names or {})
        self.zones: dict[str, str] = {}  # user -> the IANA zone users.info gives (default America/New_York)
        # True: chat.startStream/appendStream/stopStream work (their documented arguments enforced); False:
        # they answer unknown_method, as a workspace without streaming does.
        self.streams = streams
        self.sessions_error = sessions_error  # non-empty: agents.sessions.setStatus fails with it
        self.echo_bot_messages = echo_bot_messages  # send the bot's own posts back as message events
        self.not_in: set[str] = set()  # channels the bot is not a member of
        self.calls: list[ApiCall] = []
        self.messages: dict[tuple[str, str], Msg] = {}
        self.reactions: dict[tuple[str, str], list[str]] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # bodies POSTed to response_urls
        self.views: dict[str, dict[str, Any]] = {}
        self.sessions: list[dict[str, Any]] = []
        self.dms: dict[str, str] = {}  # direct-message channel id -> the person it is with (conversations.open)
        self.acks: dict[str, dict[str, Any] | None] = {}
        self.connections = 0
        self.shared: dict[str, bytes] = {}  # file id -> the bytes its download link serves
        self.downloads: list[tuple[str, str]] = []  # (path, Authorization header) of every file download
        self.pending_uploads: dict[str, dict[str, Any]] = {}  # file id -> its getUploadURLExternal args (+ bytes)
        self.uploads: list[dict[str, Any]] = []  # completed uploads: name, data, channel, thread_ts, comment
        self._faults: dict[str, list[Fault]] = {}
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._triggers: set[str] = set()
        self._ack_waiters: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        self._sockets: list[web.WebSocketResponse] = []
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> SlackDouble:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api_get)  # slack-sdk reads some methods with GET (users.info)
        app.router.add_get("/link/", self._socket)
        app.router.add_post("/respond/{n}", self._respond)
        app.router.add_get("/files-pri/{fid}/{name}", self._download)
        app.router.add_get("/files-moved/{fid}/{name}", self._moved)
        app.router.add_post("/upload/{fid}", self._upload)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> SlackDouble:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def env(self) -> dict[str, str]:
        return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_API_URL": self.api_url}

    # ---- waiting -----------------------------------------------------------------------------------
    def _touch(self) -> None:
        self._changed.set()

    async def wait_for(self, pred: Callable[[SlackDouble], Any], timeout: float = 60.0) -> Any:
        """Wait until pred(double) is truthy (re-checked after every change); returns its value."""
        return await until(self._changed, lambda: pred(self), timeout)

    async def connected(self, timeout: float = 30.0) -> None:
        await self.wait_for(lambda d: d._sockets, timeout)

    # ---- faults ------------------------------------------------------------------------------------
    def fail(self, method: str, times: int = 1, *, status: int = 429, retry_after: int | None = 1,
             error: str = "ratelimited") -> None:
        self._faults.setdefault(method, []).extend(Fault(status, retry_after, error) for _ in range(times))

    def heal(self) -> None:
        """Drop every fault not played yet: the next calls are answered normally."""
        self._faults.clear()

    # ---- reading -----------------------------------------------------------------------------------
    def called(self, method: str, ok_only: bool = True) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method and (not ok_only or (c.status == 200 and not c.error))]

    def thread(self, channel: str, root: str) -> list[Msg]:
        """The root and its replies, in post order (deleted messages left out)."""
        return [m for m in self.messages.values()
                if m.channel == channel and (m.ts == root or m.thread_ts == root) and not m.deleted]

    def roots(self, channel: str) -> list[Msg]:
        return [m for m in self.messages.values() if m.channel == channel and not m.thread_ts and not m.deleted]

    def find(self, channel: str, root: str, pred: Callable[[Msg], bool]) -> Msg | None:
        return next((m for m in self.thread(channel, root) if pred(m)), None)

    def ephemerals_for(self, user: str) -> list[str]:
        return [e["text"] for e in self.ephemerals if e["user"] == user]

    # ---- the Web API -------------------------------------------------------------------------------
    async def _api_get(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["method"] not in GET_METHODS:
            return web.Response(status=405, text="POST only")
        return await self._api(request)

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        if request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        args.update({k: v for k, v in request.query.items() if k not in args})
        call = ApiCall(method, args, time.perf_counter())
        self.calls.append(call)
        self._touch()
        want = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if request.headers.get("Authorization") != f"Bearer {want}":
            call.error = "invalid_auth"
            return web.json_response({"ok": False, "error": "invalid_auth"})
        faults = self._faults.get(method)
        if faults:
            fault = faults.pop(0)
            call.status, call.error = fault.status, fault.error
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            if fault.status >= 500:
                return web.Response(status=fault.status, text="upstream trouble", headers=headers)
            return web.json_response({"ok": False, "error": fault.error}, status=fault.status, headers=headers)
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            call.error = "unknown_method"
            return web.json_response({"ok": False, "error": "unknown_method"})
        result: dict[str, Any] = handler(args)
        if not result.get("ok"):
            call.error = str(result.get("error"))
        self._touch()
        return web.json_response(result)

    def _next_ts(self) -> str:
        n = next(self._ts)
        return f"{1700000000 + n}.{n:06d}"

    @staticmethod
    def _json_arg(args: dict[str, Any], key: str) -> Any:
        v = args.get(key)
        return json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v

    def _m_auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://double.slack.test/", "team": "Double", "user": "flower",
                "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False}

    def _m_apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket=t{next(self._ids)}"}

    def _m_chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = str(args.get("channel", ""))
        if channel in self.not_in:
            return {"ok": False, "error": "not_in_channel"}
        blocks = self._json_arg(args, "blocks") or []
        if problem := message_problem(blocks):
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        ts = self._next_ts()
        msg = Msg(channel, ts, str(args.get("text", "")), blocks, str(args.get("thread_ts") or ""))
        self.messages[(channel, ts)] = msg
        if self.echo_bot_messages:
            asyncio.get_running_loop().create_task(self.event({**msg.as_payload(), "channel": channel}))
        return {"ok": True, "channel": channel, "ts": ts, "message": msg.as_payload()}

    def _m_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        msg = self.messages.get((str(args.get("channel")), str(args.get("ts"))))
        if msg is None or msg.deleted:
            return {"ok": False, "error": "message_not_found"}
        blocks = self._json_arg(args, "blocks") or []
        if problem := message_problem(blocks):
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        msg.text, msg.blocks = str(args.get("text", "")), blocks
        msg.versions += 1
        return {"ok": True, "channel": msg.channel, "ts": msg.ts}

    # ---- streaming (docs.slack.dev chat.startStream / appendStream / stopStream) ---------------------
    STREAM_MARKDOWN_MAX = 12_000
    TASK_STATES = ("pending", "in_progress", "complete", "error")

    def _chunks(self, args: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | str:
        """(markdown text, other chunks) of a stream call, or the error Slack answers for bad ones."""
        text = args.get("markdown_text")
        if text is not None and not isinstance(text, str):
            return "invalid_arguments"
        md = [text] if text else []
        others = []
        chunks = self._json_arg(args, "chunks") or []
        if not isinstance(chunks, list):
            return "invalid_chunks"
        for c in chunks:
            kind = c.get("type") if isinstance(c, dict) else None
            if kind == "markdown_text" and isinstance(c.get("text"), str):
                md.append(c["text"])
            elif kind == "task_update" and c.get("id") and c.get("title") and c.get("status") in self.TASK_STATES:
                others.append(c)
            elif kind == "plan_update" and isinstance(c.get("title"), str) and c["title"]:
                others.append(c)
            elif kind == "blocks" and isinstance(c.get("blocks"), list):
                others.append(c)
            else:
                return "invalid_chunks"
        joined = "".join(md)
        if len(joined) > self.STREAM_MARKDOWN_MAX:
            return "msg_too_long"
        return joined, others

    def _apply(self, msg: Msg, got: tuple[str, list[dict[str, Any]]]) -> None:
        text, others = got
        msg.text += text
        for c in others:
            if c["type"] == "task_update":
                msg.tasks[str(c["id"])] = {k: c[k] for k in ("title", "status", "details", "output") if k in c}
            elif c["type"] == "plan_update":
                msg.plan = c["title"]
        msg.versions += 1

    def _m_chat_startStream(self, args: dict[str, Any]) -> dict[str, Any]:
        if not self.streams:
            return {"ok": False, "error": "unknown_method"}
        channel, thread_ts = str(args.get("channel") or ""), str(args.get("thread_ts") or "")
        if not channel or not thread_ts:
            return {"ok": False, "error": "invalid_arguments"}  # a streamed message always replies in a thread
        if channel in self.not_in:
            return {"ok": False, "error": "not_in_channel"}
        if not channel.startswith("D") and not (args.get("recipient_user_id") and args.get("recipient_team_id")):
            return {"ok": False, "error": "invalid_arguments"}  # both required outside a direct message
        if args.get("recipient_team_id") not in (None, TEAM):
            return {"ok": False, "error": "team_not_found"}
        mode = args.get("task_display_mode")
        if mode not in (None, "timeline", "plan"):
            return {"ok": False, "error": "invalid_arguments"}
        got = self._chunks(args)
        if isinstance(got, str):
            return {"ok": False, "error": got}
        ts = self._next_ts()
        msg = Msg(channel, ts, "", thread_ts=thread_ts, streaming=True, display=str(mode or "timeline"), versions=0)
        self._apply(msg, got)
        self.messages[(channel, ts)] = msg
        return {"ok": True, "channel": channel, "ts": ts}

    def _streaming(self, args: dict[str, Any]) -> Msg | str:
        if not self.streams:
            return "unknown_method"
        if not args.get("channel") or not args.get("ts"):
            return "invalid_arguments"
        msg = self.messages.get((str(args["channel"]), str(args["ts"])))
        if msg is None or msg.deleted:
            return "message_not_found"
        return msg if msg.streaming else "message_not_in_streaming_state"

    def _m_chat_appendStream(self, args: dict[str, Any]) -> dict[str, Any]:
        msg = self._streaming(args)
        got = self._chunks(args) if isinstance(msg, Msg) else msg
        if isinstance(msg, str) or isinstance(got, str):
            return {"ok": False, "error": msg if isinstance(msg, str) else got}
        self._apply(msg, got)
        return {"ok": True, "channel": msg.channel, "ts": msg.ts}

    def _m_chat_stopStream(self, args: dict[str, Any]) -> dict[str, Any]:
        msg = self._streaming(args)
        got = self._chunks(args) if isinstance(msg, Msg) else msg
        if isinstance(msg, str) or isinstance(got, str):
            return {"ok": False, "error": msg if isinstance(msg, str) else got}
        self._apply(msg, got)
        msg.streaming = False
        return {"ok": True, "channel": msg.channel, "ts": msg.ts}

    def _m_chat_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        msg = self.messages.get((str(args.get("channel")), str(args.get("ts"))))
        if msg is None or msg.deleted:
            return {"ok": False, "error": "message_not_found"}
        msg.deleted = True
        return {"ok": True}

    def _m_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        if str(args.get("channel")) in self.not_in:
            return {"ok": False, "error": "not_in_channel"}
        self.ephemerals.append({"channel": args.get("channel"), "user": args.get("user"), "text": args.get("text"),
                                "thread_ts": args.get("thread_ts") or "", "blocks": self._json_arg(args, "blocks")})
        return {"ok": True, "message_ts": self._next_ts()}

    def _reaction_target(self, args: dict[str, Any]) -> tuple[str, str] | None:
        key = (str(args.get("channel")), str(args.get("timestamp")))
        return key if key in self.messages and not self.messages[key].deleted else None

    def _m_reactions_add(self, args: dict[str, Any]) -> dict[str, Any]:
        key = self._reaction_target(args)
        if key is None:
            return {"ok": False, "error": "message_not_found"}
        names = self.reactions.setdefault(key, [])
        if args.get("name") in names:
            return {"ok": False, "error": "already_reacted"}
        names.append(str(args.get("name")))
        return {"ok": True}

    def _m_reactions_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        key = self._reaction_target(args)
        if key is None:
            return {"ok": False, "error": "message_not_found"}
        names = self.reactions.setdefault(key, [])
        if args.get("name") not in names:
            return {"ok": False, "error": "no_reaction"}
        names.remove(str(args.get("name")))
        return {"ok": True}

    def _m_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("trigger_id") not in self._triggers:
            return {"ok": False, "error": "invalid_trigger_id"}
        self._triggers.discard(str(args.get("trigger_id")))
        view = dict(self._json_arg(args, "view") or {})
        if problem := view_problem(view):
            return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [problem]}}
        view_id = f"V{next(self._ids):04d}"
        view.update({"id": view_id, "hash": f"h{view_id}", "team_id": TEAM, "app_id": APP})
        self.views[view_id] = view
        return {"ok": True, "view": view}

    def _m_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = str(args.get("user"))
        name = self.names.get(user, f"person-{user}")
        return {"ok": True, "user": {"id": user, "name": name.lower(), "real_name": name,
                                     "tz": self.zones.get(user, "America/New_York"),
                                     "profile": {"display_name": name, "real_name": name}}}

    def _m_conversations_open(self, args: dict[str, Any]) -> dict[str, Any]:
        user = str(args.get("users", ""))
        channel = f"D{user.lstrip('U')}"
        self.dms[channel] = user
        return {"ok": True, "channel": {"id": channel}}

    def _m_agents_sessions_setStatus(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.sessions_error:
            return {"ok": False, "error": self.sessions_error}
        self.sessions.append(dict(args))
        return {"ok": True}

    # ---- files people share (url_private_download) ----------------------------------------------------
    def share_file(self, name: str, data: bytes, mimetype: str = "text/plain", *, size: int | None = None,
                   moved_elsewhere: bool = False) -> dict[str, Any]:
        """A file as a message event carries it; its download link serves `data` to the bot token only.
        `size`: what Slack announces (default: the real one); `moved_elsewhere`: the link redirects to
        another host (the bot must not follow it with its token)."""
        fid = f"F{next(self._ids):06d}"
        self.shared[fid] = data
        kind = "files-moved" if moved_elsewhere else "files-pri"
        url = f"http://127.0.0.1:{self.port}/{kind}/{fid}/{name.replace('/', '%2F')}"
        return {"id": fid, "name": name, "title": name, "mimetype": mimetype, "filetype": "text",
                "size": len(data) if size is None else size, "url_private": url, "url_private_download": url,
                "mode": "hosted"}

    async def _download(self, request: web.Request) -> web.Response:
        self.downloads.append((request.path, request.headers.get("Authorization", "")))
        self._touch()
        if request.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
            return web.Response(status=403, text="<html>sign in</html>", content_type="text/html")
        data = self.shared.get(request.match_info["fid"])
        if data is None:
            return web.Response(status=404, text="not found")
        return web.Response(body=data, content_type="application/octet-stream")

    async def _moved(self, request: web.Request) -> web.Response:
        self.downloads.append((request.path, request.headers.get("Authorization", "")))
        self._touch()
        raise web.HTTPFound(f"http://files.elsewhere.invalid/steal/{request.match_info['fid']}")

    # ---- files the bot uploads (files_upload_v2) ----------------------------------------------------
    def _m_files_getUploadURLExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        name, length = args.get("filename"), args.get("length")
        if not name or not str(length or "").isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        fid = f"F{next(self._ids):06d}"
        self.pending_uploads[fid] = {"name": str(name), "length": int(str(length)), "data": None}
        return {"ok": True, "upload_url": f"http://127.0.0.1:{self.port}/upload/{fid}", "file_id": fid}

    async def _upload(self, request: web.Request) -> web.Response:
        pending = self.pending_uploads.get(request.match_info["fid"])
        if pending is None:
            return web.Response(status=404, text="no such upload")
        pending["data"] = await request.read()
        self._touch()
        return web.Response(text=f"OK - {len(pending['data'])}")

    def _m_files_completeUploadExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        files = self._json_arg(args, "files")
        if not isinstance(files, list) or not files:
            return {"ok": False, "error": "invalid_arguments"}
        channel, thread_ts = str(args.get("channel_id") or ""), str(args.get("thread_ts") or "")
        if thread_ts and (channel, thread_ts) in self.messages and self.messages[(channel, thread_ts)].thread_ts:
            return {"ok": False, "error": "invalid_thread_ts"}  # thread_ts must be the parent's, never a reply's
        done = []
        for f in files:
            pending = self.pending_uploads.pop(str(f.get("id")), None)
            if pending is None or pending["data"] is None or len(pending["data"]) != pending["length"]:
                return {"ok": False, "error": "file_upload_not_completed"}
            self.uploads.append({"id": f["id"], "name": pending["name"], "title": f.get("title"),
                                 "data": pending["data"], "channel": channel, "thread_ts": thread_ts,
                                 "comment": str(args.get("initial_comment") or "")})
            done.append({"id": f["id"], "title": f.get("title") or pending["name"]})
        return {"ok": True, "files": done}

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.responses.append({"n": request.match_info["n"], **body})
        self._touch()
        return web.Response(text="ok")

    # ---- Socket Mode -------------------------------------------------------------------------------
    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.connections += 1
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "debug_info": {"host": "double", "approximate_connection_time": 3600},
                                      "connection_info": {"app_id": APP}}))
        self._sockets.append(ws)
        self._touch()
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                data = json.loads(msg.data)
                env_id = data.get("envelope_id")
                if env_id:
                    self.acks[env_id] = data.get("payload")
                    fut = self._ack_waiters.pop(env_id, None)
                    if fut is not None and not fut.done():
                        fut.set_result(data.get("payload"))
                    self._touch()
        finally:
            self._sockets.remove(ws)
            self._touch()
        return ws

    async def send(self, type_: str, payload: dict[str, Any], *, envelope_id: str | None = None,
                   retry_attempt: int = 0, wait_ack: bool = True, timeout: float = 10.0) -> dict[str, Any] | None:
        """Send one envelope on the live socket; with wait_ack, return the ack's payload (None if empty)."""
        await self.connected()
        env_id = envelope_id or f"env-{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._ack_waiters[env_id] = fut
        envelope = {"envelope_id": env_id, "type": type_, "payload": payload,
                    "accepts_response_payload": type_ in ("slash_commands", "interactive")}
        if type_ == "events_api":
            envelope.update({"retry_attempt": retry_attempt, "retry_reason": "timeout" if retry_attempt else ""})
        await self._sockets[-1].send_str(json.dumps(envelope))
        if not wait_ack:
            return None
        return await asyncio.wait_for(fut, timeout)

    def _trigger(self) -> str:
        t = f"trig-{next(self._ids)}"
        self._triggers.add(t)
        return t

    def _user(self, user: str) -> dict[str, Any]:
        name = self.names.get(user, f"person-{user}")
        return {"id": user, "username": name.lower(), "name": name.lower(), "team_id": TEAM}

    def _response_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/respond/{next(self._ids)}"

    # ---- payloads Slack would send ---------------------------------------------------------------------
    def slash_payload(self, command: str, text: str, *, user: str, channel: str) -> dict[str, Any]:
        return {"token": "t", "team_id": TEAM, "team_domain": "double", "channel_id": channel,
                "channel_name": f"name-{channel}", "user_id": user, "user_name": self._user(user)["name"],
                "command": command, "text": text, "api_app_id": APP, "is_enterprise_install": "false",
                "response_url": self._response_url(), "trigger_id": self._trigger()}

    async def slash(self, command: str, text: str, *, user: str, channel: str, **kw: Any) -> dict[str, Any] | None:
        return await self.send("slash_commands", self.slash_payload(command, text, user=user, channel=channel), **kw)

    def click_payload(self, msg: Msg | None, label: str, *, user: str, channel: str = "",
                      buttons: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """A click on the button labelled `label` of a posted message (or of an ephemeral's `buttons`)."""
        elements = msg.buttons() if msg is not None else list(buttons or [])
        button = next((b for b in elements if b["text"]["text"] == label or b["action_id"] == label), None)
        if button is None:
            raise AssertionError(f"no button {label!r}; have {[b['text']['text'] for b in elements]}")
        channel = msg.channel if msg is not None else channel
        container: dict[str, Any] = {"type": "message", "channel_id": channel,
                                     "message_ts": msg.ts if msg is not None else self._next_ts(),
                                     "is_ephemeral": msg is None}
        payload: dict[str, Any] = {
            "type": "block_actions", "user": self._user(user), "api_app_id": APP, "token": "t",
            "container": container, "trigger_id": self._trigger(), "team": {"id": TEAM, "domain": "double"},
            "channel": {"id": channel, "name": f"name-{channel}"}, "response_url": self._response_url(),
            "actions": [{"action_id": button["action_id"], "block_id": "b1", "text": button["text"],
                         "type": "button", "action_ts": f"{time.time():.6f}",
                         **({"value": button["value"]} if "value" in button else {})}],
            "state": {"values": {}}}
        if msg is not None:
            if msg.thread_ts:
                container["thread_ts"] = msg.thread_ts
            payload["message"] = msg.as_payload()
        return payload

    async def click(self, msg: Msg | None, label: str, *, user: str, **kw: Any) -> dict[str, Any] | None:
        payload = self.click_payload(msg, label, user=user, channel=kw.pop("channel", ""),
                                     buttons=kw.pop("buttons", None))
        return await self.send("interactive", payload, **kw)

    def submit_payload(self, view_id: str, *, user: str, text: str | None = None, end: bool = False) -> dict[str, Any]:
        view = dict(self.views[view_id])
        values: dict[str, Any] = {}
        for b in view.get("blocks", []):
            if b.get("type") != "input":
                continue
            el = b["element"]
            if el["type"] == "plain_text_input":
                values[b["block_id"]] = {el["action_id"]: {"type": "plain_text_input", "value": text}}
            elif el["type"] == "checkboxes":
                chosen = [o for o in el["options"] if end]
                values[b["block_id"]] = {el["action_id"]: {"type": "checkboxes", "selected_options": chosen}}
        view["state"] = {"values": values}
        return {"type": "view_submission", "team": {"id": TEAM, "domain": "double"}, "user": self._user(user),
                "api_app_id": APP, "token": "t", "trigger_id": self._trigger(), "view": view, "response_urls": []}

    async def submit(self, view_id: str, *, user: str, text: str | None = None, end: bool = False,
                     **kw: Any) -> dict[str, Any] | None:
        return await self.send("interactive", self.submit_payload(view_id, user=user, text=text, end=end), **kw)

    async def shortcut(self, msg: Msg, *, user: str, callback_id: str = "flower_interrupt",
                       **kw: Any) -> dict[str, Any] | None:
        payload = {"type": "message_action", "callback_id": callback_id, "trigger_id": self._trigger(),
                   "response_url": self._response_url(), "team": {"id": TEAM, "domain": "double"},
                   "channel": {"id": msg.channel, "name": f"name-{msg.channel}"}, "user": self._user(user),
                   "message": msg.as_payload(), "message_ts": msg.ts, "action_ts": f"{time.time():.6f}",
                   "token": "t", "api_app_id": APP}
        return await self.send("interactive", payload, **kw)

    def event_payload(self, event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
        return {"token": "t", "team_id": TEAM, "api_app_id": APP, "event": event, "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._ids):06d}", "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]}

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, **kw: Any) -> dict[str, Any] | None:
        return await self.send("events_api", self.event_payload(event, event_id=event_id), **kw)

    def person_says(self, channel: str, text: str, *, user: str, thread_ts: str = "") -> Msg:
        """Store a person's message (so the bot can react to it); the caller sends its event."""
        ts = self._next_ts()
        msg = Msg(channel, ts, text, [], thread_ts, user=user, bot=False)
        self.messages[(channel, ts)] = msg
        return msg

    async def say(self, channel: str, text: str, *, user: str, thread_ts: str = "", mention: bool = False,
                  files: list[dict[str, Any]] | None = None, **kw: Any) -> Msg:
        """A person writes in the channel (or a thread): the message, then its event (app_mention when
        it mentions the bot — Slack then also sends the plain message event, as here). `files`: shared
        with it (from `share_file`), as a `file_share` message."""
        msg = self.person_says(channel, text, user=user, thread_ts=thread_ts)
        event = {"type": "message", "channel": channel, "user": user, "text": text, "ts": msg.ts,
                 "event_ts": msg.ts, "channel_type": "channel"}
        if files:
            event.update({"subtype": "file_share", "files": files, "upload": True})
        if thread_ts:
            event["thread_ts"] = thread_ts
        if mention:
            await self.event({**event, "type": "app_mention"}, **kw)
        await self.event(event, **kw)
        return msg
