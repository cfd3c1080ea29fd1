"""The web front end: a page (runs list, live chat thread) and an HTTP API, served by aiohttp.

Parts (the same names in every platform package): `frontend.WebFrontend` (the plug-in the bot process
runs: the aiohttp server, its guard, the hub's tap; `make_app` builds the application), `inbound` (request
bodies, query parameters and the page's frames read into plain values and intents), `render` (messages,
runs, cards and intents' outcomes as JSON), `errors` (`ApiError` and the middleware that answers every
failure under /api as JSON), `surface` (`WebSurface`: we are the platform, so it keeps the threads the
page shows), `context` (`WebContext`, what every route handler shares), and the limits in
`adapters.platform.limits`. Beside them: the route handlers (`api` the intents, `files` a run's files,
`stream` a run's events for scripts, `page` the page and its WebSocket), the per-run `events` logs, and
the `guard` (loopback, token, origin).
"""

from adapters.web.events import EventLog, EventLogs, event_record, json_safe
from adapters.web.frontend import WebFrontend, make_app
from adapters.web.surface import WEB, WebSurface

__all__ = ["WEB", "EventLog", "EventLogs", "WebFrontend", "WebSurface", "event_record", "json_safe", "make_app"]
