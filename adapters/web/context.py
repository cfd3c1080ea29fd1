"""WebContext: what every route handler of the web front end shares, and how a handler finds it.

    ctx = context_of(request)             # the front end's one context (the app holds it under WEB_KEY)
    record = record_of(request)           # the run {run_id} names, else 404
    data = await read_body(request, {"text": str})
    return ctx.show(await ctx.hub.submit(Send(record.run_id, text), WEB_USER, where=ctx.where(record)))

=====================================  ==========================================================
member                                 what
=====================================  ==========================================================
`hub`, `attach(hub)`, `ready`          the hub (attached by the front end after it is built)
`surface`, `events`                    the page's threads (`WebSurface`), the runs' event logs
`page_thread(r)`, `where(r)`           the page's thread of a run (its own or a mirror); the
                                       `where=` an intent from the page carries
`mirror_thread(r)`                     where the page mirrors a run started elsewhere
`run_json(r)`                          a run as the API and the page list it (render.run_json)
`show(result, **extra)`                an intent's outcome as the answer (render.result_json)
`pages`, `sockets`, `runs_version`,    open pages (their watchers) and sockets, closed on stop; the
`runs_changed()`, `end_socket(…)`      runs list's version, bumped (and pages woken) on a change;
                                       a socket's last steps
`demo`, `boot`, `max_body`             the page's demo banner, this process's id (a page reloads on
                                       a new one), the body size limit (413 above it)
=====================================  ==========================================================

Every person on the page is one user, `WEB_USER`: the page has no login (the guard decides who reaches it).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from aiohttp import web

from adapters.hub import IntentResult
from adapters.platform import ThreadRef
from adapters.state import RunRecord
from adapters.web.errors import ApiError
from adapters.web.events import EventLogs
from adapters.web.inbound import Fields, parse_body
from adapters.web.render import result_json, run_json
from adapters.web.surface import Watcher, WebSurface

if TYPE_CHECKING:
    from adapters.hub import Hub

__all__ = ["PLATFORM", "WEB_KEY", "WEB_USER", "WebContext", "context_of", "read_body", "record_of"]

PLATFORM = "web"
WEB_USER = "web"


class WebContext:
    def __init__(self, surface: WebSurface, events: EventLogs, *, demo: bool = False, max_body: int) -> None:
        self.surface, self.events = surface, events
        self.demo = demo
        self.max_body = max_body
        self.boot = uuid.uuid4().hex[:8]
        self.pages: set[Watcher] = set()
        self.sockets: set[web.WebSocketResponse] = set()  # open pages and event streams, closed on stop
        self.runs_version = 0
        self._hub: Hub | None = None

    # ---- wiring -------------------------------------------------------------------------------------
    def attach(self, hub: Hub) -> None:
        self._hub = hub

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            raise RuntimeError("WebFrontend.attach(hub) was not called")
        return self._hub

    @property
    def ready(self) -> bool:
        return self._hub is not None

    # ---- which thread of the page shows a run -------------------------------------------------------
    @staticmethod
    def mirror_thread(record: RunRecord) -> ThreadRef | None:
        """The page's mirror of a run started on another front end (None for one started here)."""
        return None if record.thread.platform == PLATFORM else ThreadRef(PLATFORM, "page", record.run_id)

    def page_thread(self, record: RunRecord) -> ThreadRef | None:
        """The page's thread for a run: its own (started here) or the mirror of one started elsewhere."""
        if record.thread.platform == PLATFORM:
            return record.thread
        return next((t for t in self.hub.query.followers(record.run_id) if t.platform == PLATFORM), None)

    def where(self, record: RunRecord) -> ThreadRef | None:
        """The `where=` an intent from this page carries (cards of a run shown in several places say
        where an answer came from): the page's thread of the run, if it shows it."""
        return self.page_thread(record)

    def run_json(self, record: RunRecord) -> dict[str, Any]:
        query = self.hub.query
        return run_json(record, page=self.page_thread(record), live=query.is_live(record.run_id),
                        worker=query.holder(record.run_id), chosen=query.model(record.run_id))

    # ---- answering ----------------------------------------------------------------------------------
    @staticmethod
    def show(result: IntentResult, **extra: Any) -> web.Response:
        """An intent's outcome as the answer to the request that asked for it: 200 with the hub's message (and
        `extra`), or 409 with its reason (nothing changed)."""
        body, status = result_json(result, **extra)
        return web.json_response(body, status=status)

    # ---- change signals -----------------------------------------------------------------------------
    def runs_changed(self) -> None:
        """The runs list may have changed: every page refreshes it."""
        self.runs_version += 1
        for watcher in self.pages:
            watcher.wake.set()

    async def end_socket(self, ws: web.WebSocketResponse, reader: asyncio.Task[None]) -> None:
        """A socket's last steps, whichever route served it: forget it, stop its reader, close it."""
        self.sockets.discard(ws)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await ws.close()


WEB_KEY: web.AppKey[WebContext] = web.AppKey("flower_web", WebContext)


# ---- what handlers read from a request ---------------------------------------------------------------
def context_of(request: web.Request) -> WebContext:
    return request.app[WEB_KEY]


def record_of(request: web.Request) -> RunRecord:
    """The run the route's {run_id} names (404 when there is none)."""
    run_id = request.match_info["run_id"]
    record = context_of(request).hub.query.run(run_id)
    if record is None:
        raise ApiError(404, f"no run {run_id!r}")
    return record


async def read_body(request: web.Request, fields: Fields) -> dict[str, Any]:
    """The JSON object in the body, checked against `fields` (name -> accepted types; inbound.parse_body)."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, f"the request body is over the {context_of(request).max_body} byte limit") from None
    return parse_body(raw, request.content_type, fields)
