"""Who may talk to the web front end: loopback by default, a token anywhere else.

- Bound to a loopback address with no token: only requests whose Host is a loopback name are
  served (a page on another site that rebinds its DNS name to 127.0.0.1 is refused).
- With a token (required off loopback): every request and WebSocket must carry it — header
  `Authorization: Bearer …` or `X-Flower-Token`, the `flower_token` cookie, or `?token=` (opening
  the printed URL sets the cookie and drops the token from the address bar).
- WebSockets and JSON posts from a browser must come from this very origin (the Origin header),
  and posts must be `application/json`, which a cross-site form cannot send without permission.
- A request the HTTP parser refuses (a NUL byte in a header, a method it does not know) is answered
  400 by aiohttp before any of this runs; `HTTP_LOG`, the server's logger, notes it in one line
  instead of aiohttp's traceback (and never repeats the offending bytes, which may carry a token).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import hdrs, web
from aiohttp.http import HttpProcessingError

__all__ = ["COOKIE", "HTTP_LOG", "Guard", "is_loopback", "new_token"]

COOKIE = "flower_token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class MalformedInOneLine(logging.Filter):
    """Turns aiohttp's "Error handling request" traceback for a request its parser refused (a bad
    client, not a bug of ours) into one warning line naming only the kind of fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            reason = (exc.message or type(exc).__name__).strip().splitlines()[0].rstrip(":")
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg, record.args = "web: refused a malformed HTTP request from %s: %s (400)", (remote, reason)
            record.exc_info, record.exc_text = None, None
            if record.levelno > logging.WARNING:
                record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


HTTP_LOG = logging.getLogger("adapters.web.http")  # the server's logger (AppRunner(logger=...))
HTTP_LOG.addFilter(MalformedInOneLine())


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _hostname(host_header: str) -> str:
    """"127.0.0.1:8470" -> "127.0.0.1"; "[::1]:80" -> "::1"."""
    return urlsplit(f"//{host_header}").hostname or ""


class Guard:
    def __init__(self, token: str | None) -> None:
        self.token = token or None

    def presented(self, request: web.Request) -> str | None:
        auth = request.headers.get(hdrs.AUTHORIZATION, "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return (request.headers.get("X-Flower-Token") or request.cookies.get(COOKIE)
                or request.query.get("token"))

    def token_ok(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        given = self.presented(request)
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    @staticmethod
    def same_origin(request: web.Request) -> bool:
        """No Origin (a script, not a browser) or an Origin naming this very host and port."""
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        api = request.path.startswith("/api/") or request.path == "/ws"
        if self.token is None and not is_loopback(_hostname(request.host)):
            return _deny(api, 403, f"this server answers only on loopback addresses, not {request.host!r}")
        if not self.token_ok(request):
            return _deny(api, 401, "a token is required: open the URL printed when the bot started, or send "
                                   "'Authorization: Bearer <token>'")
        upgrade = request.headers.get(hdrs.UPGRADE, "").lower() == "websocket"
        if (upgrade or request.method not in ("GET", "HEAD", "OPTIONS")) and not self.same_origin(request):
            return _deny(api, 403, f"cross-origin request refused (Origin {request.headers.get(hdrs.ORIGIN)!r})")
        if request.method == "GET" and "token" in request.query and not api and self.token is not None:
            # The printed URL carries the token once: keep it in a cookie, out of the address bar.
            rest = request.rel_url.with_query([(k, v) for k, v in request.query.items() if k != "token"])
            response = web.Response(status=302, headers={hdrs.LOCATION: str(rest)})
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
            return response
        return await handler(request)


def _deny(api: bool, status: int, message: str) -> web.Response:
    if api:
        return web.json_response({"ok": False, "error": message}, status=status)
    return web.Response(status=status, text=f"flower: {message}\n", content_type="text/plain")
