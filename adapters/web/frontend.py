"""WebFrontend: the web page and the HTTP API as one of the bot's front ends.

    front = WebFrontend(host="127.0.0.1", port=8470, demo=True, db_path=root / "web-threads.db")
    hub = Hub({"web": front.surface}, store, ...)
    front.keep_events_in(store)  # optional: run event logs outlive the process (the bot's state store)
    front.attach(hub)          # the run event log taps the hub
    await front.start()        # listening; prints the URL (with a generated token off loopback)
    ...
    await front.stop()

Its pieces: `WebContext` (what every route handler shares: the hub, the surface, the event logs, open
pages and sockets; `front.ctx`), `WebSurface` (the threads the page shows), `EventLogs` (the per-run
event logs of the API), `Guard` (loopback/token/origin), and the aiohttp application built by
`make_app` from the route modules' `routes()` (api, files, stream, page) and the `json_errors`
middleware. The front end itself taps the hub (every event into the logs; a run going live is
watched until it ends) and asks it to mirror runs started elsewhere onto the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from adapters.platform import OutMessage, StartRefused, ThreadRef
from adapters.platform.limits import WEB
from adapters.web.api import new_thread
from adapters.web.api import routes as api_routes
from adapters.web.context import PLATFORM, WEB_KEY, WebContext
from adapters.web.errors import json_errors
from adapters.web.events import EventLogs, EventStore
from adapters.web.files import routes as file_routes
from adapters.web.guard import HTTP_LOG, Guard, is_loopback, new_token
from adapters.web.page import routes as page_routes
from adapters.web.routines import routes as routine_routes
from adapters.web.stream import routes as stream_routes
from adapters.web.surface import WebSurface
from flower_core import Event

if TYPE_CHECKING:
    from adapters.hub import Hub
    from adapters.ops.http import OpsEndpoints

log = logging.getLogger(__name__)

__all__ = ["MAX_BODY", "WebFrontend", "make_app"]

MAX_BODY = 256 * 1024  # a request body; answers and mail are short, a task fits easily
SECURITY_HEADERS = {
    # Nothing but our own files: even a rendering bug cannot run or load anything else.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class WebFrontend:
    name = PLATFORM
    # Operations: the bot sets these endpoints before start(); /healthz and /readyz then answer before the
    # guard, /metrics behind it (see adapters/ops/http.py).
    ops: OpsEndpoints | None = None

    async def health(self) -> str:
        return "listening" if self._runner is not None else "stopped"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 8470, token: str | None = None, demo: bool = False,
                 db_path: str | Path | None = None, event_maxlen: int = WEB.event_log_max, max_body: int = MAX_BODY,
                 mirror_all: bool = True, say: Callable[[str], object] = print) -> None:
        self.host, self.port = host, port
        self.token_generated = not token and not is_loopback(host)
        self.token = token or (new_token() if self.token_generated else None)
        self.guard = Guard(self.token)
        self.ctx = WebContext(WebSurface(db_path), EventLogs(event_maxlen), demo=demo, max_body=max_body)
        self._ends: dict[str, asyncio.Task[None]] = {}
        self._runner: web.AppRunner | None = None
        self._say = say
        self.mirror_all = mirror_all  # show runs started on other front ends too
        self.surface.listeners.append(self._on_message)

    # ---- what the context holds, as the bot, tests and benches name it ---------------------------
    @property
    def surface(self) -> WebSurface:
        return self.ctx.surface

    @property
    def events(self) -> EventLogs:
        return self.ctx.events

    @property
    def demo(self) -> bool:
        return self.ctx.demo

    @property
    def max_body(self) -> int:
        return self.ctx.max_body

    def keep_events_in(self, store: EventStore) -> None:
        """Keep the runs' event logs in `store`, so `/events` and the WebSockets serve them after a restart
        with the same seqs (without one they live in memory only)."""
        self.events.keep_in(store)

    # ---- the Frontend protocol ------------------------------------------------------------------
    @property
    def hub(self) -> Hub:
        return self.ctx.hub

    def attach(self, hub: Hub) -> None:
        self.ctx.attach(hub)
        hub.hooks.tap(self._tap)
        # Runs started elsewhere (Slack, Discord) show on the page too, where the hub can mirror them.
        if self.mirror_all:
            hub.hooks.auto_mirror(self.ctx.mirror_thread)
        hub.hooks.open_threads(PLATFORM, self._open_thread)

    async def _open_thread(self, channel: str, card: OutMessage) -> ThreadRef:
        """A routine's run on the page: a new thread, which needs no root (its status card is its first message)."""
        return new_thread()

    async def start(self) -> None:
        if self._runner is not None:
            return
        runner = web.AppRunner(make_app(self), access_log=None, handle_signals=False, logger=HTTP_LOG)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:  # the port is taken, or the address is not ours
            await runner.cleanup()
            raise StartRefused(f"web page: cannot listen on {self.host}:{self.port} ({exc.strerror or exc}); "
                               "is another flower-bot running? choose another --port") from None
        self._runner = runner
        if runner.addresses:  # the real port when 0 (any free one) was asked for
            self.port = int(runner.addresses[0][1])
        self._announce()

    async def stop(self) -> None:
        for task in list(self._ends.values()):
            task.cancel()
        self._ends.clear()
        for ws in list(self.ctx.sockets):
            with contextlib.suppress(Exception):
                await ws.close()
        for watcher in list(self.ctx.pages):
            watcher.wake.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        self.events.close()  # the runs have stopped (the bot closes the hub first): their last events
        self.surface.close()

    # ---- addresses ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.host in ("0.0.0.0", "::"):
            host = "127.0.0.1"  # listening everywhere: this machine reaches it on loopback too
        return f"http://{host}:{self.port}/"

    def _announce(self) -> None:
        banner = " (offline demo — model double, no API key)" if self.demo else ""
        if self.token is None:
            self._say(f"flower web page{banner}: {self.url}")
        elif self.token_generated:
            # Printed once on the terminal for the person who started it; never logged.
            self._say(f"flower web page{banner}: {self.url}?token={self.token}\n"
                      "  (bound beyond loopback: this generated token is required; set FLOWER_WEB_TOKEN to choose it)")
        else:
            self._say(f"flower web page{banner}: {self.url} (token from FLOWER_WEB_TOKEN / [web].token: "
                      "open it as ?token=… once, or send 'Authorization: Bearer …')")

    # ---- change signals -------------------------------------------------------------------------
    def _on_message(self, thread: ThreadRef, body: dict[str, Any]) -> None:
        if body.get("kind") in ("status", "summary"):
            self.ctx.runs_changed()

    def _tap(self, run_id: str, ev: Event) -> None:
        """Every event of every run (a hub tap: never raises). Also notices runs going live, so
        their event streams hear when they end."""
        self.events.tap(run_id, ev)
        try:
            if run_id not in self._ends and self.ctx.ready and self.hub.query.is_live(run_id):
                self._ends[run_id] = asyncio.get_running_loop().create_task(self._await_end(run_id))
        except Exception as exc:
            log.warning("web: cannot follow run %s: %r", run_id, exc)

    async def _await_end(self, run_id: str) -> None:
        try:
            await self.hub.query.wait(run_id)
        finally:
            self._ends.pop(run_id, None)
            found = self.events.get(run_id)
            if found is not None:
                found.poke()
            self.ctx.runs_changed()


async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)


def make_app(front: WebFrontend) -> web.Application:
    app = web.Application(middlewares=[front.guard.middleware, json_errors], client_max_size=front.max_body)
    app[WEB_KEY] = front.ctx
    app.router.add_routes(api_routes() + routine_routes() + file_routes() + stream_routes() + page_routes())
    app.on_response_prepare.append(_on_prepare)
    if front.ops is not None:  # operations endpoints: health and readiness open, metrics behind the guard
        front.ops.mount(app)
    return app
