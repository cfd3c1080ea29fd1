"""A run's events for scripts: `GET /api/runs/{id}/events?after=N` and its WebSocket twin.

The seed's "sequence number + polling" front end. Both answer the same object —
{"events": [{"seq", "kind", "text", "tool", "payload"}, …], "dropped", "first", "last", "run",
"status", "live"} — the WebSocket as a first frame (the catch-up after N) and then one frame per
batch of new events, plus one when the run's status changes (e.g. it ended). `dropped` is true when
events after N existed but the log (a deque with maxlen) no longer holds them; `last` is the
cursor to use next. At most PAGE_MAX events per answer: ask again from `last`. With the bot's state
store the log outlives the process (adapters/web/events.py): after a restart the same events come
back with the same seqs, and a woken run's new ones continue above them.

`?partial=1` adds "writing": the main thread's words being written now ({"after": seq, "text"}, or
null), and the WebSocket then sends a frame whenever those words grow. Without it, nothing changes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import WSMsgType, web

from adapters.web.context import WebContext, context_of, record_of
from adapters.web.inbound import after_cursor

__all__ = ["PAGE_MAX", "after_param", "events_frame", "partial_param", "routes"]

PAGE_MAX = 1000


async def events(request: web.Request) -> web.Response:
    record = record_of(request)
    body, _ = events_frame(context_of(request), record.run_id, after_param(request), partial=partial_param(request))
    return web.Response(text=body, content_type="application/json")


def partial_param(request: web.Request) -> bool:
    return request.query.get("partial", "") in ("1", "true", "yes")


def after_param(request: web.Request) -> int:
    return after_cursor(request.query.get("after", "0"))


def events_frame(ctx: WebContext, run_id: str, after: int, *, partial: bool = False) -> tuple[str, dict[str, Any]]:
    """The events answer as JSON text, and its fields besides the events (plus "count").

    Events are joined from their JSON encoded once when logged: ten pages following a run cost
    ten socket writes per batch, not ten encodings of every event. What is served is written first
    (a no-op when nothing is pending), so a seq a client saw survives a crash.
    """
    ctx.events.flush()
    log = ctx.events.get(run_id)
    record = ctx.hub.query.run(run_id)
    meta: dict[str, Any] = {"dropped": after > 0, "first": 0, "last": after, "run": run_id,
                            "status": record.status if record else "unknown", "live": ctx.hub.query.is_live(run_id)}
    texts: list[str] = []
    if log is not None:  # else: nothing seen in this process (yet)
        page = log.after(after, PAGE_MAX)
        meta.update(dropped=page.dropped, first=page.first, last=page.last)
        texts = page.texts
    if partial:
        meta["writing"] = log.writing if log is not None else None
    body = '{"events": [' + ",".join(texts) + "], " + json.dumps(meta)[1:]
    return body, {**meta, "count": len(texts)}


async def run_ws(request: web.Request) -> web.WebSocketResponse:
    ctx, record = context_of(request), record_of(request)
    cursor, partial = after_param(request), partial_param(request)
    ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=64 * 1024)
    await ws.prepare(request)
    log = ctx.events.get(record.run_id, create=True)
    assert log is not None
    wake = log.waiter()
    ctx.sockets.add(ws)
    reader = asyncio.create_task(_drain(ws, wake))
    try:
        first, last_status, last_writing = True, ("", False), None
        while not ws.closed:
            wake.clear()
            body, frame = events_frame(ctx, record.run_id, cursor, partial=partial)
            status = (frame["status"], frame["live"])
            writing = frame.get("writing")
            if first or frame["count"] or status != last_status or writing != last_writing:
                await ws.send_str(body)
                first, last_status, cursor, last_writing = False, status, frame["last"], writing
                if frame["count"] >= PAGE_MAX:
                    continue  # more to catch up on before waiting
            await wake.wait()
    except (ConnectionResetError, RuntimeError):
        pass  # the client went away mid-send
    finally:
        log.release(wake)
        await ctx.end_socket(ws, reader)
    return ws


async def _drain(ws: web.WebSocketResponse, wake: asyncio.Event) -> None:
    """Read (and ignore) what the client sends, so pings are answered and a close is noticed."""
    try:
        async for msg in ws:
            if msg.type == WSMsgType.ERROR:
                break
    finally:
        wake.set()


def routes() -> list[web.RouteDef]:
    return [web.get("/api/runs/{run_id}/events", events), web.get("/api/runs/{run_id}/ws", run_ws)]
