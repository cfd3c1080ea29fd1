"""The HTTP API's routines (runs that start themselves, adapters/hub/routines.py), over the hub's intents.

=========================================  =============================================================
route                                      body → answer
=========================================  =============================================================
POST   /api/routines                       {"task", "schedule", "timezone"?, "name"?, "options"?: {"timeout_s",
                                           "max_asks", "budget_usd", "approve"}, "overlap"?: "skip"|"queue",
                                           "catch_up"?: bool} → 201 {"ok", "id", "next", "message"}; a bad
                                           schedule, zone or option → 400 saying what is accepted
GET    /api/routines                       → {"routines": [routine, …]} (render.routine_json)
GET    /api/routines/{id}                  → routine, with its last runs ("last")
POST   /api/routines/{id}/pause|resume     → {"ok", "message"}
POST   /api/routines/{id}/run              → {"ok", "message", "id": the run's id} (one occurrence now)
DELETE /api/routines/{id}                  → {"ok", "message"}
=========================================  =============================================================

A routine made here lives on the web page: its runs appear as new threads of the page. Unknown ids are 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from adapters.hub import RoutineAction, RoutineVerb
from adapters.platform import ThreadRef
from adapters.web.context import PLATFORM, WEB_USER, context_of, read_body
from adapters.web.errors import ApiError
from adapters.web.inbound import ROUTINE_FIELDS, read_routine
from adapters.web.render import routine_json

__all__ = ["PAGE", "routes"]

PAGE = ThreadRef(PLATFORM, "page")  # the place of the page's routines


async def add(request: web.Request) -> web.Response:
    ctx = context_of(request)
    routine = read_routine(await read_body(request, ROUTINE_FIELDS))
    result = await ctx.hub.submit(routine, WEB_USER, where=PAGE)
    if not result.ok:
        raise ApiError(400 if not result.told else 403, result.message or "refused")
    info = ctx.hub.query.routine(result.routine_id)
    return web.json_response({"ok": True, "id": result.routine_id, "next": info.next if info else None,
                              "message": result.message}, status=201)


async def listing(request: web.Request) -> web.Response:
    ctx = context_of(request)
    return web.json_response({"routines": [routine_json(i) for i in ctx.hub.query.routines()]})


async def one(request: web.Request) -> web.Response:
    ctx = context_of(request)
    info = ctx.hub.query.routine(_known(request))
    assert info is not None
    return web.json_response(routine_json(info))


def _known(request: web.Request) -> str:
    routine_id = request.match_info["routine_id"]
    if context_of(request).hub.query.routine(routine_id, last=0) is None:
        raise ApiError(404, f"no routine {routine_id!r} (GET /api/routines lists them)")
    return routine_id


def _act(verb: RoutineVerb) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        ctx = context_of(request)
        routine_id = _known(request)
        await read_body(request, {})
        return ctx.show(await ctx.hub.submit(RoutineAction(routine_id, verb), WEB_USER))
    return handler


def routes() -> list[web.RouteDef]:
    return [
        web.get("/api/routines", listing),
        web.post("/api/routines", add),
        web.get("/api/routines/{routine_id}", one),
        web.post("/api/routines/{routine_id}/pause", _act("pause")),
        web.post("/api/routines/{routine_id}/resume", _act("resume")),
        web.post("/api/routines/{routine_id}/run", _act("run")),
        web.delete("/api/routines/{routine_id}", _act("delete")),
    ]
