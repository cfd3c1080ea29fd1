"""A run's events for scripts: `GET /api/runs/{id}/events?after=N` and its WebSocket twin.

The seed's "sequence number + polling" front end. Both answer the same object —
{"events": [{"seq", "kind", "text", "tool", "payload"}, …], "dropped", "first", "last", "run",
"status", "live"} — the WebSocket as a first frame (the catch-up after N) and then one frame per
batch of new events, plus one when the run's status changes (e.g. it ended). `dropped` is true when
events after N existed but the log (a deque with maxlen) no longer holds them; `last` is the
cursor to use next. At most PAGE_MAX events per answer: ask again from `last`. With the bot's state
store the log outlives the process (adapters/web/events.py): after a restart the same events come
back with the same seqs, and a woken run's new ones continue above them.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from adapters.web.api import ApiError, record_of, web_of

if TYPE_CHECKING:
    from adapters.web.frontend import WebFrontend

__all__ = ["PAGE_MAX", "after_param", "events_frame", "stream_routes"]

PAGE_MAX = 1000


async def events(request: web.Request) -> web.Response:
    record = record_of(request)
    body, _ = events_frame(web_of(request), record.run_id, after_param(request))
    return web.Response(text=body, content_type="application/json")


def after_param(request: web.Request) -> int:
    raw = request.query.get("after", "0")
    if not re.fullmatch(r"[0-9]{1,18}", raw):
        raise ApiError(400, f"'after' must be a sequence number (0 or more), got {raw[:40]!r}")
    return int(raw)


def events_frame(w: WebFrontend, run_id: str, after: int) -> tuple[str, dict[str, Any]]:
    """The events answer as JSON text, and its fields besides the events (plus "count").

    Events are joined from their JSON encoded once when logged: ten pages following a run cost
    ten socket writes per batch, not ten encodings of every event. What is served is written first
    (a no-op when nothing is pending), so a seq a client saw survives a crash.
    """
    w.events.flush()
    log = w.events.get(run_id)
    record = w.hub.query.run(run_id)
    meta: dict[str, Any] = {"dropped": after > 0, "first": 0, "last": after, "run": run_id,
                            "status": record.status if record else "unknown", "live": w.hub.query.is_live(run_id)}
    texts: list[str] = []
    if log is not None:  # else: nothing seen in this process (yet)
        page = log.after(after, PAGE_MAX)
        meta.update(dropped=page.dropped, first=page.first, last=page.last)
        texts = page.texts
    body = '{"events": [' + ",".join(texts) + "], " + json.dumps(meta)[1:]
    return body, {**meta, "count": len(texts)}


async def run_ws(request: web.Request) -> web.WebSocketResponse:
    w, record = web_of(request), record_of(request)
    cursor = after_param(request)
    ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=64 * 1024)
    await ws.prepare(request)
    log = w.events.get(record.run_id, create=True)
    assert log is not None
    wake = log.waiter()
    w.sockets.add(ws)
    reader = asyncio.create_task(_drain(ws, wake))
    try:
        first, last_status = True, ("", False)
        while not ws.closed:
            wake.clear()
            body, frame = events_frame(w, record.run_id, cursor)
            status = (frame["status"], frame["live"])
            if first or frame["count"] or status != last_status:
                await ws.send_str(body)
                first, last_status, cursor = False, status, frame["last"]
                if frame["count"] >= PAGE_MAX:
                    continue  # more to catch up on before waiting
            await wake.wait()
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away mid-send
    finally:
        log.release(wake)
        await w.end_socket(ws, reader)
    return ws


async def _drain(ws: web.WebSocketResponse, wake: asyncio.Event) -> None:
    """Read (and ignore) what the client sends, so pings are answered and a close is noticed."""
    try:
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    finally:
        wake.set()


def stream_routes() -> list[web.RouteDef]:
    return [web.get("/api/runs/{run_id}/events", events), web.get("/api/runs/{run_id}/ws", run_ws)]
