"""The Discord double's gateway: one WebSocket session at a time, the way discord.py meets Discord.

HELLO (op 10) on connect; heartbeats (op 1) are acknowledged (op 11); IDENTIFY (op 2) opens a
session with READY and one GUILD_CREATE; RESUME (op 6) replays the dispatches the client missed
while it was away and ends with RESUMED, or answers INVALID_SESSION (op 9) when the session is gone.
Dispatches made while no client is attached are kept in the session's log, so a resumed client
loses nothing; a client that identifies afresh starts a new session (and, as on Discord, the old
session's missed dispatches are gone). `drop()` cuts the connection like a network failure.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

PRIVILEGED_INTENTS = (1 << 1) | (1 << 8) | (1 << 15)  # members, presences, message content


@dataclass
class Session:
    id: str
    seq: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)  # every dispatch frame, in order


@dataclass
class Frame:
    direction: str  # "in" (from the client) / "out"
    op: int
    t: str | None = None
    s: int | None = None


class Gateway:
    def __init__(self, *, token: str, ready: Callable[[Session], dict[str, Any]],
                 guild_create: Callable[[], dict[str, Any]], on_change: Callable[[], None],
                 heartbeat_ms: int = 41250) -> None:
        self.token, self._ready, self._guild_create, self._on_change = token, ready, guild_create, on_change
        self.heartbeat_ms = heartbeat_ms
        self.session: Session | None = None
        self.frames: list[Frame] = []
        self.identifies = self.resumes = self.heartbeats = self.connections = 0
        self.refuse_privileged = False  # close 4014 on an IDENTIFY asking for privileged intents
        self.intents: int | None = None
        self._ws: web.WebSocketResponse | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._attached = False  # the current socket belongs to the current session and is caught up
        self._lock = asyncio.Lock()
        self.on_sent: Callable[[dict[str, Any]], None] | None = None  # called for each dispatch sent
        self._open = asyncio.Event()  # cleared: new connections wait (an outage that lasts a while)
        self._open.set()

    @property
    def connected(self) -> bool:
        return self._ws is not None and not self._ws.closed and self._attached

    # ---- the socket ------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        await self._open.wait()
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        if self._ws is not None and not self._ws.closed:
            await self._ws.close(code=4000)  # one connection at a time, like a single shard
        self._ws, self._attached, self._transport = ws, False, request.transport
        self.connections += 1
        await self._send(ws, {"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}, "s": None, "t": None})
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                op = frame.get("op")
                self.frames.append(Frame("in", op))
                if op == 1:
                    self.heartbeats += 1
                    await self._send(ws, {"op": 11, "d": None, "s": None, "t": None})
                elif op == 2:
                    await self._identify(ws, frame.get("d") or {})
                elif op == 6:
                    await self._resume(ws, frame.get("d") or {})
                self._on_change()
        finally:
            if self._ws is ws:
                self._attached = False
            self._on_change()
        return ws

    async def _identify(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> None:
        self.identifies += 1
        if d.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        self.intents = int(d.get("intents") or 0)
        if self.refuse_privileged and self.intents & PRIVILEGED_INTENTS:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        async with self._lock:
            self.session = Session(secrets.token_hex(16))
            self._attached = True
            await self._dispatch_locked("READY", self._ready(self.session))
            await self._dispatch_locked("GUILD_CREATE", self._guild_create())

    async def _resume(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> None:
        self.resumes += 1
        s = self.session
        if d.get("token") != self.token or s is None or d.get("session_id") != s.id:
            await self._send(ws, {"op": 9, "d": False, "s": None, "t": None})
            return
        async with self._lock:
            after = int(d.get("seq") or 0)
            for frame in s.log:
                if frame["s"] > after:
                    await self._send(ws, frame)
            self._attached = True
            await self._dispatch_locked("RESUMED", {})

    # ---- what the tests do -------------------------------------------------------------------------
    async def dispatch(self, t: str, d: dict[str, Any]) -> int:
        """Send a dispatch to the client (or keep it for a resume); its sequence number."""
        async with self._lock:
            return await self._dispatch_locked(t, d)

    async def _dispatch_locked(self, t: str, d: dict[str, Any]) -> int:
        s = self.session
        if s is None:
            raise RuntimeError("no gateway session: the client has not identified yet")
        s.seq += 1
        frame = {"op": 0, "t": t, "s": s.seq, "d": d}
        s.log.append(frame)
        if self._attached and self._ws is not None and not self._ws.closed:
            await self._send(self._ws, frame)
        return s.seq

    async def drop(self, *, resumable: bool = True, hold: bool = False) -> None:
        """Cut the connection without a close frame; with resumable=False the session is forgotten, so
        the client's RESUME is refused and it identifies afresh; hold=True keeps it out until `reopen()`."""
        if hold:
            self._open.clear()
        self._attached = False
        if not resumable:
            self.session = None
        if self._transport is not None:
            self._transport.abort()  # type: ignore[attr-defined]

    async def send_raw(self, frame: dict[str, Any]) -> None:
        """Any frame as it is, on the current socket (a malformed one, a second HELLO...)."""
        if self._ws is None or self._ws.closed:
            raise RuntimeError("no client is connected")
        await self._send(self._ws, frame)

    async def close_with(self, code: int) -> None:
        """Close the current socket with a close code, as Discord does (4004: the token was refused...)."""
        self._attached = False
        if self._ws is not None and not self._ws.closed:
            await self._ws.close(code=code)

    def reopen(self) -> None:
        self._open.set()

    async def close(self) -> None:
        self._open.set()
        if self._ws is not None and not self._ws.closed:
            await self._ws.close(code=1001)

    async def _send(self, ws: web.WebSocketResponse, frame: dict[str, Any]) -> None:
        self.frames.append(Frame("out", frame["op"], frame.get("t"), frame.get("s")))
        try:
            await ws.send_str(json.dumps(frame))
        except (ConnectionResetError, RuntimeError):
            return  # the client is gone; a resume replays dispatches from the log
        if frame["op"] == 0 and self.on_sent is not None:
            self.on_sent(frame)
