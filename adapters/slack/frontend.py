"""SlackFrontend: the Slack plug-in of the bot process — an `AsyncApp` with flower's listeners, its
Web API clients, and one transport (Socket Mode by default, or HTTP with request signing).

`start()` in Socket Mode: `auth.test` (who the bot is; a bad SLACK_BOT_TOKEN stops here),
`apps.connections.open` through the same Web API base URL (a bad SLACK_APP_TOKEN stops here, and the
WebSocket URL it returns is the one used), connect, and return once Slack's `hello` arrived. In
HTTP mode it serves Bolt's aiohttp app on host:port/path instead.

Every delivery is acked (a catch-all listener per kind, and in Socket Mode an ack even when Bolt
found nothing to run), and deduplicated twice through the hub's store: the Socket Mode envelope id,
and the payload's own identity (event_id, trigger_id) — so Events API retries, Socket Mode re-sends
and double clicks have one effect, across a restart too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app, send_async_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from adapters.hub import Hub
from adapters.platform import StartRefused
from adapters.slack.commands import register as register_commands
from adapters.slack.context import SlackContext
from adapters.slack.errors import error_code
from adapters.slack.events import register as register_events
from adapters.slack.files import SlackFiles
from adapters.slack.inbound import dedupe_key
from adapters.slack.interactive import register as register_interactive
from adapters.slack.sessions import AgentSessions
from adapters.slack.surface import SlackSurface

__all__ = ["DEFAULT_API_URL", "SlackFrontend", "SlackSettings", "SlackStartError"]

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://slack.com/api/"
MODES = ("socket", "http")


class _QuietTokenWarning(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and then warns that the client we hand
    it wins: true, and by design here, so the line is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


BOLT_LOG = logging.getLogger("adapters.slack.bolt")
BOLT_LOG.addFilter(_QuietTokenWarning())


class SlackStartError(StartRefused):
    """Slack refused the bot at start (a bad token, no hello): one line, no secret in it."""


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str
    app_token: str = ""  # Socket Mode: an app-level token (xapp-…) with connections:write
    signing_secret: str = ""  # HTTP mode: verifies that requests come from Slack
    mode: str = "socket"
    api_url: str = DEFAULT_API_URL
    host: str = "127.0.0.1"  # HTTP mode: where to listen (put a TLS proxy or tunnel in front)
    port: int = 3000
    path: str = "/slack/events"
    agent_sessions: bool = True
    hello_timeout_s: float = 15.0
    rate_limit_retries: int = 2  # slack-sdk's own 429 retries, for the calls that bypass the outbox

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    def __repr__(self) -> str:  # never print the secrets
        return f"SlackSettings(mode={self.mode!r}, api_url={self.api_url!r}, host={self.host!r}, port={self.port})"


class _SocketHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, plus: replayed envelopes are acked and dropped, an envelope Bolt could
    not place is acked anyway (Slack would otherwise re-send it and show an error), and so is one whose
    payload is not an object (null, a number, a list, a string, or missing): one line, dropped."""

    def __init__(self, app: AsyncApp, app_token: str, ctx: SlackContext) -> None:
        super().__init__(app, app_token)
        self.ctx = ctx
        self.hello = asyncio.Event()
        self.client.message_listeners.append(self._on_message)

    async def _on_message(self, client: Any, message: dict[str, Any], raw: str | None) -> None:
        """Every message on the socket, before the SDK turns an envelope into a request."""
        if message.get("type") == "hello":
            self.hello.set()
        envelope_id = message.get("envelope_id")
        if not envelope_id or _request_of(message):
            return
        # The SDK would raise building its request (a traceback in its log) and nobody would ack: ack it
        # here and take the payload out, so `SocketModeRequest.from_dict` makes no request of it at all.
        what = type(message.pop("payload")).__name__ if "payload" in message else "missing"
        log.warning("Slack %s envelope not understood (payload: %s, not an object): acked and dropped",
                    message.get("type"), what)
        try:
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=str(envelope_id)))
        except Exception as exc:  # the socket went away meanwhile: Slack sends the envelope again
            log.info("could not ack envelope %s: %r", envelope_id, exc)

    async def handle(self, client: Any, req: SocketModeRequest) -> None:
        if req.envelope_id and self.ctx.seen(f"slack:envelope:{req.envelope_id}"):
            log.info("envelope %s delivered again: acked, not handled twice", req.envelope_id)
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        start = time.time()
        try:
            resp = await run_async_bolt_app(self.app, req)
        except Exception as exc:  # a payload so broken that Bolt's own parsing fails on it (a numeric user)
            log.warning("Slack %s envelope not understood (%r): acked and dropped", req.type, exc)
            resp = BoltResponse(status=200, body="")  # (said once, above)
        if resp.status != 200:
            log.warning("Slack %s envelope not handled (status %s): acked anyway", req.type, resp.status)
            resp = BoltResponse(status=200, body="")
        await send_async_response(client, req, resp, start)


def _request_of(message: dict[str, Any]) -> bool:
    """Whether this envelope is one to hand to Bolt: a type, and a payload that is an object. (The SDK would
    wrap a string as {"text": …}, which no listener takes: Slack never sends one.)"""
    return isinstance(message.get("type"), str) and isinstance(message.get("payload"), dict)


class SlackFrontend:
    name = "slack"

    def __init__(self, settings: SlackSettings) -> None:
        self.settings = settings
        base = settings.api_url if settings.api_url.endswith("/") else settings.api_url + "/"
        # The app's client: slack-sdk retries connection errors and 429s (honouring Retry-After) itself.
        retries = AsyncRateLimitErrorRetryHandler(max_retry_count=settings.rate_limit_retries)
        self.client = AsyncWebClient(token=settings.bot_token, base_url=base,
                                     retry_handlers=[AsyncConnectionErrorRetryHandler(), retries])
        # Posts and edits: the outbox paces and retries them (a 429 holds back the channel), so no handlers here.
        self.outbox_client = AsyncWebClient(token=settings.bot_token, base_url=base, retry_handlers=[])
        self.sessions = AgentSessions(self.client, enabled=settings.agent_sessions)
        self.surface = SlackSurface(self.outbox_client, notify_client=self.client, sessions=self.sessions)
        self.ctx = SlackContext(self.surface, self.client)
        self.ctx.files = self.files = SlackFiles(settings.bot_token, base)
        self.app = AsyncApp(client=self.client, signing_secret=settings.signing_secret,
                            request_verification_enabled=settings.mode == "http", name="flower", logger=BOLT_LOG)
        self.app.middleware(self._dedupe)
        self.app.error(self._on_error)
        register_commands(self.app, self.ctx)
        register_interactive(self.app, self.ctx)
        register_events(self.app, self.ctx)
        self.handler: _SocketHandler | None = None
        self.port: int | None = None  # HTTP mode: the port actually bound
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    # ---- the Frontend contract -------------------------------------------------------------------
    def attach(self, hub: Hub) -> None:
        self.ctx.attach(hub)

    async def start(self) -> None:
        """Connect; on any failure everything opened so far is closed again before the error leaves."""
        self._session = aiohttp.ClientSession()
        self.client.session = self.outbox_client.session = self.files.session = self._session  # one pool
        try:
            try:
                auth = await self.client.auth_test()
            except Exception as exc:
                raise SlackStartError(f"Slack refused SLACK_BOT_TOKEN at auth.test ({_why(exc)})") from None
            self.ctx.bot_user_id = str(auth.get("user_id") or "")
            self.ctx.team_url = str(auth.get("url") or "")
            self.surface.streams.team_id = str(auth.get("team_id") or "")  # streams name their recipient's team
            if self.settings.mode == "socket":
                await self._connect_socket()
            else:
                await self._serve_http()
        except BaseException:
            await self.stop()
            raise
        log.info("Slack connected as %s (%s mode)", auth.get("user") or self.ctx.bot_user_id, self.settings.mode)

    async def stop(self) -> None:
        handler, self.handler = self.handler, None
        if handler is not None:
            try:
                await handler.close_async()
            except Exception as exc:
                log.info("closing the Socket Mode connection: %r", exc)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self.surface.close()  # status-card edits still waiting go out (bounded) before the pool closes
        await self.sessions.close()
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # ---- transports -------------------------------------------------------------------------------
    async def _connect_socket(self) -> None:
        try:
            opened = await self.client.apps_connections_open(app_token=self.settings.app_token)
        except Exception as exc:
            raise SlackStartError(f"Slack refused SLACK_APP_TOKEN at apps.connections.open ({_why(exc)})") from None
        self.handler = _SocketHandler(self.app, self.settings.app_token, self.ctx)
        self.handler.client.wss_uri = str(opened["url"])  # the URL just issued: no second apps.connections.open
        await self.handler.connect_async()
        try:
            await asyncio.wait_for(self.handler.hello.wait(), self.settings.hello_timeout_s)
        except TimeoutError:
            raise SlackStartError(f"Slack's Socket Mode sent no hello within {self.settings.hello_timeout_s:g} s"
                                  ) from None

    async def _serve_http(self) -> None:
        self._runner = web.AppRunner(self.app.web_app(path=self.settings.path, port=self.settings.port))
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.host, self.settings.port)
        await site.start()
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.settings.port

    # ---- middleware ---------------------------------------------------------------------------------
    async def _dedupe(self, body: dict[str, Any], next: Any) -> BoltResponse | None:
        key = dedupe_key(body) if isinstance(body, dict) else None
        if key is not None and self.ctx.seen(key):
            log.info("Slack delivery %s seen before: acked, not handled twice", key)
            return BoltResponse(status=200, body="")
        return await next()

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        # After the ack: a listener failed. The log gets it; nobody gets a traceback in a channel.
        kind = body.get("type") if isinstance(body, dict) else None
        log.warning("Slack %s listener failed: %r", kind, error, exc_info=log.isEnabledFor(logging.DEBUG))


def _why(exc: BaseException) -> str:
    return error_code(exc) or f"{type(exc).__name__}: {exc}"
