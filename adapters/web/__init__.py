"""The web front end: a page (runs list, live chat thread) and an HTTP API, served by aiohttp.

`WebFrontend` is the bot's plug-in; `WebSurface` the platform the hub posts to; `EventLogs` the
per-run event logs behind `/api/runs/{id}/events` and its WebSocket.
"""

from adapters.web.events import EventLog, EventLogs, event_record, json_safe
from adapters.web.frontend import WebFrontend, make_app
from adapters.web.surface import WEB, WebSurface

__all__ = ["WEB", "EventLog", "EventLogs", "WebFrontend", "WebSurface", "event_record", "json_safe", "make_app"]
