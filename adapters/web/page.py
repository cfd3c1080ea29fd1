"""The page and its own WebSocket (`/ws`): one run's thread as rendered messages, live.

Frames (JSON). Client → server:
    {"op": "watch", "run": id, "after": N, "events_after": M}   show this run; N, M: what I already have
    {"op": "ping"}
Server → client:
    {"type": "hello", "demo": bool, "user": "web", "boot": id}
    {"type": "runs", "runs": [run, …]}                           the web runs, on connect and on change
    {"type": "thread", "run", "reset": bool, "messages": [m, …], "head": N, "now": server time}
        m = {"id", "pos", "seq", "key", "kind", "title", "text", "fields", "buttons", "origin", "at", …};
        changed messages since the client's N, current versions in post order (reset: replace all);
        `at` is when this version was stored and `now` the server's clock, so the page counts a live
        status card's Elapsed on between the card's edits, whatever the browser's clock says
    {"type": "activity", "run", "items": [{"seq", "tool", "text", "sub"}], "last": M, "dropped": bool}
        tool calls, one line each, from the run's event log
    {"type": "notice", "run", "text"}                            something only this page's person is told
    {"type": "error", "error"}

After a dropped connection or a server restart the page sends its watch again with the highest
seqs it has applied; the server answers with exactly what changed since, so nothing is shown twice
and nothing is missed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from adapters.web.context import WEB_USER, WebContext, context_of
from adapters.web.events import EventLog
from adapters.web.inbound import cursor, page_frame
from adapters.web.render import activity_json
from adapters.web.surface import Watcher

__all__ = ["STATIC", "index", "page_ws", "routes", "static"]

STATIC = Path(__file__).parent / "static"
# The page's own files, by name. A request names one of these or gets a 404 without the disk being asked: a
# name too long for the file system (ENAMETOOLONG), a NUL byte or a `..` never reaches a stat() call.
SHIPPED = {p.name: p for p in STATIC.iterdir() if p.is_file()}
RUNS_SHOWN = 200
ACTIVITY_PAGE = 500


@dataclass
class Watching:
    run_id: str
    thread: str
    cursor: int  # highest message seq sent
    log: EventLog
    events_cursor: int  # highest event seq read


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


async def static(request: web.Request) -> web.StreamResponse:
    """GET /static/{name}: one of the page's files (SHIPPED), else 404."""
    path = SHIPPED.get(request.match_info["name"])
    if path is None:
        raise web.HTTPNotFound(text="No such file.")
    return web.FileResponse(path)


async def page_ws(request: web.Request) -> web.WebSocketResponse:
    ctx = context_of(request)
    ws = web.WebSocketResponse(heartbeat=25.0, max_msg_size=16 * 1024)
    await ws.prepare(request)
    watcher = ctx.surface.watch()
    ctx.pages.add(watcher)
    ctx.sockets.add(ws)
    asks: list[dict[str, Any]] = []  # frames from the page not yet handled (of watches, the newest wins)
    reader = asyncio.create_task(_read(ws, watcher, asks))
    watching: Watching | None = None
    try:
        await ws.send_json({"type": "hello", "demo": ctx.demo, "user": WEB_USER, "boot": ctx.boot})
        runs_sent = -1
        while not ws.closed:
            watcher.wake.clear()
            if runs_sent != ctx.runs_version:
                runs_sent = ctx.runs_version
                shown = [r for r in ctx.hub.query.runs(live_only=False) if ctx.page_thread(r) is not None]
                runs = [ctx.run_json(r) for r in shown[:RUNS_SHOWN]]
                await ws.send_json({"type": "runs", "runs": runs})
            if asks:
                bad = [a for a in asks if a.get("op") != "watch"]
                wants = [a for a in asks if a.get("op") == "watch"]
                asks.clear()
                if bad:
                    await ws.send_json({"type": "error", "error": 'unknown frame; send {"op": "watch", "run": …}'})
                if wants:
                    if watching is not None:
                        watching.log.release(watcher.wake)
                    watching = await _start_watch(ws, ctx, watcher, wants[-1])
            if watching is not None:
                await _send_changes(ws, ctx, watching)
            while watcher.notices:
                note = watcher.notices.pop(0)
                if watching is not None and note["thread"] == watching.thread:
                    await ws.send_json({"type": "notice", "run": watching.run_id, "text": note["text"]})
            await watcher.wake.wait()
    except (ConnectionResetError, RuntimeError):
        pass  # the page went away mid-send
    finally:
        if watching is not None:
            watching.log.release(watcher.wake)
        ctx.surface.unwatch(watcher)
        ctx.pages.discard(watcher)
        await ctx.end_socket(ws, reader)
    return ws


async def _read(ws: web.WebSocketResponse, watcher: Watcher, asks: list[dict[str, Any]]) -> None:
    try:
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                if msg.type == WSMsgType.ERROR:
                    break
                continue
            frame = page_frame(msg.data)
            if frame is None:  # a ping
                continue
            # Only the main loop writes to the socket: hand the request (or the complaint) over.
            asks.append(frame)
            watcher.wake.set()
    finally:
        watcher.wake.set()


async def _start_watch(ws: web.WebSocketResponse, ctx: WebContext, watcher: Watcher,
                       want: dict[str, Any]) -> Watching | None:
    run_id = want.get("run")
    record = ctx.hub.query.run(run_id) if isinstance(run_id, str) else None
    page = ctx.page_thread(record) if record is not None else None
    if record is None or page is None:
        watcher.threads.clear()
        await ws.send_json({"type": "error", "error": f"no run {run_id!r} on this page"})
        return None
    thread = str(page)
    watcher.threads = {thread}
    log = ctx.events.get(record.run_id, create=True)
    log.waiter(watcher.wake)
    after = cursor(want.get("after"))
    # A cursor from the future means the server lost its store (it ran in memory): start over.
    reset = after == 0 or after > ctx.surface.thread_head(thread)
    watching = Watching(record.run_id, thread, 0 if reset else after, log, cursor(want.get("events_after")))
    await _send_changes(ws, ctx, watching, reset=reset, always=True)
    return watching


async def _send_changes(ws: web.WebSocketResponse, ctx: WebContext, watching: Watching, *, reset: bool = False,
                        always: bool = False) -> None:
    messages = ctx.surface.changes(watching.thread, watching.cursor)
    if messages or always:
        watching.cursor = max([watching.cursor, *(m["seq"] for m in messages)])
        await ws.send_json({"type": "thread", "run": watching.run_id, "reset": reset, "messages": messages,
                            "head": watching.cursor, "now": round(time.time(), 3)})
    ctx.events.flush()  # what the page is shown is on disk first (a no-op when nothing is pending)
    while True:
        page = watching.log.after(watching.events_cursor, ACTIVITY_PAGE)
        items = activity_json(page.events)
        if items or page.dropped or always:
            await ws.send_json({"type": "activity", "run": watching.run_id, "items": items, "last": page.last,
                                "dropped": page.dropped})
        always = False
        watching.events_cursor = page.last
        if len(page.events) < ACTIVITY_PAGE:
            return


def routes() -> list[web.RouteDef]:
    return [web.get("/", index), web.get("/ws", page_ws), web.get("/static/{name}", static)]
