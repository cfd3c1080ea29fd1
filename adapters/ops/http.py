"""The operations endpoints, on the web page's port or on a loopback port of their own.

    GET /healthz   200 {"ok": true}: the process is up (no token, reveals nothing)
    GET /readyz    200 / 503 {"ready", "parts": {"slack": "connected", ...}} (no token, no run data)
    GET /metrics   Prometheus text format (run counts: behind the web page's token where there is one)

On the web page (`mount`): /healthz and /readyz answer before the page's token/Origin guard, /metrics
is an ordinary route behind it. On a health port (`HealthServer`): bound to 127.0.0.1, all three
open, but only to requests whose Host is a loopback name (a web page that rebinds its DNS name to
127.0.0.1 cannot read the metrics).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from adapters.ops.health import Health
from adapters.ops.metrics import CONTENT_TYPE, Metrics
from adapters.platform import StartRefused
from adapters.web.guard import is_loopback

__all__ = ["OPEN_PATHS", "HealthServer", "OpsEndpoints"]

log = logging.getLogger(__name__)

OPEN_PATHS = ("/healthz", "/readyz")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class OpsEndpoints:
    def __init__(self, health: Health, metrics: Metrics | None = None) -> None:
        self.health, self.metrics = health, metrics

    async def healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(self, request: web.Request) -> web.Response:
        ready, parts = await self.health.check()
        body: dict[str, object] = {"ready": ready, "parts": parts}
        if self.health.stopping:
            body["stopping"] = True
        return web.json_response(body, status=200 if ready else 503)

    async def metrics_text(self, request: web.Request) -> web.Response:
        if self.metrics is None:
            raise web.HTTPNotFound()
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    @web.middleware
    async def open_paths(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Health and readiness answer before any guard that comes after this middleware."""
        if request.method in ("GET", "HEAD") and request.path in OPEN_PATHS:
            return await (self.healthz if request.path == "/healthz" else self.readyz)(request)
        return await handler(request)

    def mount(self, app: web.Application) -> None:
        """Add the endpoints to the web page's app (before it starts): the open paths first in line."""
        app.middlewares.insert(0, self.open_paths)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        if self.metrics is not None:
            app.router.add_get("/metrics", self.metrics_text)

    def app(self) -> web.Application:
        """The health port's own app."""
        app = web.Application(middlewares=[_loopback_only])
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        if self.metrics is not None:
            app.router.add_get("/metrics", self.metrics_text)
        return app


@web.middleware
async def _loopback_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    host = request.url.host or ""
    if not is_loopback(host):
        return web.Response(status=403, text=f"flower: this port answers only on loopback names, not {host!r}\n")
    return await handler(request)


class HealthServer:
    """`--health-port`: the endpoints alone on 127.0.0.1:port (0 = any free port; `port` then says which)."""

    HOST = "127.0.0.1"

    def __init__(self, endpoints: OpsEndpoints, port: int) -> None:
        self.endpoints, self.port = endpoints, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        runner = web.AppRunner(self.endpoints.app(), access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.HOST, self.port).start()
        except OSError as exc:
            await runner.cleanup()
            raise StartRefused(f"health port: cannot listen on {self.HOST}:{self.port} ({exc.strerror or exc}); "
                               "choose another --health-port") from None
        self._runner = runner
        if runner.addresses:
            self.port = int(runner.addresses[0][1])
        log.info("health, readiness and metrics on http://%s:%d/ (healthz, readyz, metrics)", self.HOST, self.port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
