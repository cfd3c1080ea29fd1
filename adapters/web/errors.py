"""The web front end's failures, as the API answers them: always JSON, `{"ok": false, "error": "…"}`.

=====================================================  ===============================================
what happened                                          the answer
=====================================================  ===============================================
a handler raised `ApiError(status, message)`           that status, the message as "error"
aiohttp refused under /api (404 no route, 413 body     its status and reason; a 405 also lists the
over `client_max_size`, 405 a method not taken)        methods the route takes (`Allow`)
a bug under /api (any other exception)                 500 "internal error: <type>", logged with its
                                                       traceback; the server and every run go on
anything outside /api (the page, its files)            aiohttp's own answer
=====================================================  ===============================================

The statuses handlers choose: 400 malformed or missing field, 404 unknown run or question, 409 the hub
refused (nothing changed), 413 over a size limit, 415 not JSON / not multipart.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web

__all__ = ["ApiError", "Handler", "json_errors"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """A request the API refuses: `status` and a sentence saying what was wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under /api every failure is JSON with a sentence saying what was wrong."""
    try:
        return await handler(request)
    except ApiError as exc:
        return web.json_response({"ok": False, "error": str(exc)}, status=exc.status)
    except web.HTTPException as exc:
        if not request.path.startswith("/api/") or exc.status < 400:
            raise
        if isinstance(exc, web.HTTPMethodNotAllowed):
            allowed = ", ".join(sorted(exc.allowed_methods))
            return web.json_response({"ok": False, "error": f"{request.path} does not take {exc.method}; "
                                      f"it takes {allowed}"}, status=405, headers={hdrs.ALLOW: allowed})
        return web.json_response({"ok": False, "error": exc.reason}, status=exc.status)
    except Exception as exc:  # a bug: say so in JSON, keep the server (and every run) going
        if not request.path.startswith("/api/"):
            raise
        log.exception("web api %s %s failed", request.method, request.path)
        return web.json_response({"ok": False, "error": f"internal error: {type(exc).__name__}"}, status=500)
