"""The HTTP API: the seed's "sequence number + polling" front end, over the hub's intents.

=========================================  =============================================================
route                                      body → answer
=========================================  =============================================================
GET  /api/runs                             → {"runs": [run, …]} newest first
POST /api/runs                             {"task", "timeout_s"?, "max_asks"?, "budget_usd"?, "approve"?: ["Bash", …]}
                                             → 201 {"id", …}
GET  /api/runs/{id}                        → run
GET  /api/runs/{id}/events?after=N         → {"events": [{"seq","kind","text","tool","payload"}], "dropped",
                                             "first", "last", "status", "live"}
GET  /api/runs/{id}/asks                   → [{"id","question","options","waited_s","kind"[,"tool","input"]}, …]
                                             (the seed's shape; "kind": "question", "approval" or "budget")
POST /api/runs/{id}/answer                 {"ask_id", "text"}
POST /api/runs/{id}/decline                {"ask_id", "text"?}  (text = the reason, may be empty)
POST /api/runs/{id}/approve                {"ask_id", "decision": "once"|"run"|"deny", "text"?}  a tool approval
POST /api/runs/{id}/send                   {"text"}  inbox mail
POST /api/runs/{id}/interrupt              {"text"}  (empty: stop and go on)
POST /api/runs/{id}/end                    —  stop the run for good
POST /api/runs/{id}/wake                   {"text"?}  wake a run that did not come back after a restart
POST /api/runs/{id}/continue               {"text"}  an ended run's next round → {"ok", "id", "round"}; 409 while live
POST /api/runs/{id}/oracle                 {"question"}
POST /api/runs/{id}/say                    {"text"}  a line typed in the thread (?oracle, qN: answer, else mail)
POST /api/action                           {"action_id", "text"?, "delivery_id"?}  a button of a message
GET  /api/runs/{id}/ws?after=N             WebSocket: frames shaped like the events answer, catch-up first
=========================================  =============================================================

(The two event routes live in stream.py; the run's files, upload, list and download, in files.py.)
Intents answer {"ok": true, "message", "id"}. Bad input
answers {"ok": false, "error"} with 400 (malformed or missing field, empty text), 404 (unknown run
or question), 405 (a method the route does not take; `Allow` lists those it does), 409 (the hub
refused: settled question, run not running, limit reached…), 413 (body over the size limit) or 415
(not JSON) — and changes nothing. Numbers must be finite (JSON's NaN/Infinity are refused) and a
body is one flat object, so one nested too deeply for the parser is malformed, not a crash.
"""

from __future__ import annotations

import json
import logging
import math
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import hdrs, web

from adapters.hub import (
    Answer,
    Approve,
    CardProblem,
    Click,
    Continue,
    Decline,
    IntentResult,
    Interrupt,
    Oracle,
    RunOptions,
    Said,
    Send,
    Start,
    Stop,
    Wake,
)
from adapters.ids import IdError, decode
from adapters.platform.limits import WEB
from adapters.state import RunRecord
from adapters.surface import ThreadRef
from adapters.web.events import json_safe

if TYPE_CHECKING:
    from adapters.web.frontend import WebFrontend

__all__ = ["WEB_KEY", "WEB_USER", "ApiError", "new_thread", "routes", "run_json"]

log = logging.getLogger(__name__)

WEB_USER = "web"
APPROVAL_DECISIONS = ("once", "run", "deny")
WEB_KEY: web.AppKey[WebFrontend] = web.AppKey("flower_web")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def new_thread() -> ThreadRef:
    return ThreadRef("web", "page", "t" + uuid.uuid4().hex[:12])


def run_json(web_: WebFrontend, r: RunRecord) -> dict[str, Any]:
    page = web_.page_thread(r)
    return {"id": r.run_id, "task": r.task, "status": r.status, "owner": r.owner, "platform": r.thread.platform,
            "thread": str(r.thread), "page_thread": str(page) if page is not None else None,
            "created_at": r.created_at, "updated_at": r.updated_at, "round": r.round,
            "live": web_.hub.query.is_live(r.run_id), "worker": web_.hub.query.holder(r.run_id)}


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


# ---- reading requests ----------------------------------------------------------------------------
async def read_body(request: web.Request, fields: dict[str, type | tuple[type, ...]]) -> dict[str, Any]:
    """The JSON object in the body, checked against `fields` (name -> accepted types)."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, f"the request body is over the {web_of(request).max_body} byte limit") from None
    if not raw.strip():
        data: Any = {}
    else:
        if request.content_type != "application/json":
            raise ApiError(415, f"send JSON with Content-Type: application/json (got {request.content_type!r})")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, f"malformed JSON: {exc}") from None
        except RecursionError:  # the parser's own stack limit: no body of ours nests at all
            raise ApiError(400, "malformed JSON: nested too deeply (the body is one flat object)") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object")
    for key, value in data.items():
        if key not in fields:
            raise ApiError(400, f"unknown field {key!r} (known: {', '.join(fields) or 'none'})")
        spec = fields[key]
        kinds: tuple[type, ...] = spec if isinstance(spec, tuple) else (spec,)
        a_bool = isinstance(value, bool) and bool not in kinds  # JSON true is not the number 1
        if value is not None and (a_bool or not isinstance(value, kinds)):
            names = "number" if float in kinds else "whole number" if int in kinds else "string"
            raise ApiError(400, f"{key!r} must be a {names}, got {shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):  # NaN, ±Infinity, or 1e400 overflowing
            raise ApiError(400, f"{key!r} must be a finite number, got {shown(value)}")
    return data


def shown(value: Any) -> str:
    """A value for an error message: a scalar as JSON, a container by its kind (it may nest deeply)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value)[:60]


def text_field(data: dict[str, Any], key: str, *, required: bool = True, empty_ok: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise ApiError(400, f"missing field {key!r}")
        return ""
    if not empty_ok and not value.strip():
        raise ApiError(400, f"{key!r} is empty: say something")
    if len(value) > WEB.input_max:
        raise ApiError(400, f"{key!r} is {len(value)} characters, over the {WEB.input_max} limit")
    return str(value)


def number_field(data: dict[str, Any], key: str, *, integer: bool = False) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if integer and not isinstance(value, int):
        raise ApiError(400, f"{key!r} must be a whole number, got {value!r}")
    if value < 0:
        raise ApiError(400, f"{key!r} must be 0 or more, got {value!r}")
    return value


def web_of(request: web.Request) -> WebFrontend:
    return request.app[WEB_KEY]


def record_of(request: web.Request) -> RunRecord:
    run_id = request.match_info["run_id"]
    record = web_of(request).hub.query.run(run_id)
    if record is None:
        raise ApiError(404, f"no run {run_id!r}")
    return record


def answered(result: IntentResult, **extra: Any) -> web.Response:
    """A hub result as the answer: refusals are 409 (nothing changed), with the hub's reason."""
    if result.ok:
        return web.json_response({"ok": True, "message": result.message, "id": result.run_id, **extra})
    return web.json_response({"ok": False, "error": result.message, "id": result.run_id,
                              "duplicate": result.duplicate}, status=409)


# ---- runs ----------------------------------------------------------------------------------------
async def list_runs(request: web.Request) -> web.Response:
    w = web_of(request)
    return web.json_response({"runs": [run_json(w, r) for r in w.hub.query.runs(live_only=False)]})


async def start_run(request: web.Request) -> web.Response:
    w = web_of(request)
    data = await read_body(request, {"task": str, "timeout_s": (int, float), "max_asks": int,
                                     "budget_usd": (int, float), "approve": list})
    task = text_field(data, "task")
    approve = data.get("approve")
    if approve is not None and not all(isinstance(t, str) for t in approve):
        raise ApiError(400, "'approve' must be a list of tool rules (strings), e.g. [\"Bash\", \"Edit\"]")
    options = RunOptions(timeout_s=number_field(data, "timeout_s"),
                         max_asks=number_field(data, "max_asks", integer=True),
                         budget_usd=number_field(data, "budget_usd"),
                         approve=None if approve is None else tuple(approve))
    if (bad := options.problem()) is not None:
        raise ApiError(400, bad)
    thread = new_thread()
    result = await w.hub.submit(Start(task, options), WEB_USER, where=thread)
    if not result.ok:
        return answered(result)
    w.runs_changed()
    return web.json_response({"ok": True, "id": result.run_id, "message": result.message, "thread": str(thread)},
                             status=201)


async def get_run(request: web.Request) -> web.Response:
    return web.json_response(run_json(web_of(request), record_of(request)))


async def asks(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    return web.json_response([ask_json(c) for c in w.hub.query.open_cards(record.run_id)])


def ask_json(card: Any) -> dict[str, Any]:
    out = {"id": card.card_id, "question": card.question, "options": card.options, "waited_s": card.waited_s,
           "kind": card.kind or "question"}
    if card.kind == "approval":
        out.update(tool=card.facts.get("tool", ""), input=json_safe(card.facts.get("input") or {}))
    return out


def resolve_card(w: WebFrontend, record: RunRecord, ask_id: str) -> str:
    """The card an ask id names ("1-q2", or the seed's "q2" for the newest open card of that name);
    404 when unknown, 409 when already settled (the hub's one rule for cards)."""
    card_id = ask_id
    problem, message = w.hub.query.card_state(record.run_id, card_id)
    if problem is CardProblem.UNKNOWN and re.fullmatch(r"q[0-9]{1,6}", ask_id):
        card_id = w.hub.query.card_by_key(record.run_id, ask_id) or ask_id
        problem, message = w.hub.query.card_state(record.run_id, card_id)
    if problem is CardProblem.UNKNOWN:
        raise ApiError(404, f"run {record.run_id} has no question {ask_id!r} (GET .../asks lists the open ones)")
    if problem in (CardProblem.SETTLED, CardProblem.ENDED):
        raise ApiError(409, f"question {card_id}: {message}")
    return card_id


async def answer(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    data = await read_body(request, {"ask_id": str, "text": str})
    ask_id, text = text_field(data, "ask_id"), text_field(data, "text")
    card_id = resolve_card(w, record, ask_id.strip())
    result = await w.hub.submit(Answer(record.run_id, card_id, text), WEB_USER, where=w.where(record))
    return answered(result, ask_id=card_id)


async def decline(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    data = await read_body(request, {"ask_id": str, "text": str})
    ask_id, reason = text_field(data, "ask_id"), text_field(data, "text", required=False, empty_ok=True)
    card_id = resolve_card(w, record, ask_id.strip())
    result = await w.hub.submit(Decline(record.run_id, card_id, reason), WEB_USER, where=w.where(record))
    return answered(result, ask_id=card_id)


async def approve(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    data = await read_body(request, {"ask_id": str, "decision": str, "text": str})
    ask_id, decision = text_field(data, "ask_id"), text_field(data, "decision").strip()
    words = text_field(data, "text", required=False, empty_ok=True)
    if decision not in APPROVAL_DECISIONS:
        raise ApiError(400, f"decision must be one of {', '.join(APPROVAL_DECISIONS)}, got {shown(decision)}")
    card_id = resolve_card(w, record, ask_id.strip())
    if not any(c.card_id == card_id and c.kind == "approval" for c in w.hub.query.open_cards(record.run_id)):
        raise ApiError(400, f"{card_id} is a question, not a tool approval: use .../answer or .../decline")
    result = await w.hub.submit(Approve(record.run_id, card_id, decision, words), WEB_USER, where=w.where(record))
    return answered(result, ask_id=card_id)


async def send(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    return answered(await w.hub.submit(Send(record.run_id, text), WEB_USER, where=w.where(record)))


async def interrupt(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text", required=False, empty_ok=True)
    return answered(await w.hub.submit(Interrupt(record.run_id, text), WEB_USER))


async def end(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    await read_body(request, {})
    return answered(await w.hub.submit(Stop(record.run_id), WEB_USER))


async def wake(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    remark = text_field(await read_body(request, {"text": str}), "text", required=False, empty_ok=True)
    return answered(await w.hub.submit(Wake(record.run_id, remark), WEB_USER))


async def continue_run(request: web.Request) -> web.Response:
    """An ended run's next round, in the same session; a live run takes words as mail (`/send`)."""
    w, record = web_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    if w.hub.query.is_live(record.run_id):
        raise ApiError(409, f"run {record.run_id} is still going: write to it with POST /api/runs/{record.run_id}/send")
    result = await w.hub.submit(Continue(record.run_id, text), WEB_USER, where=w.where(record))
    if not result.ok:
        return answered(result)
    w.runs_changed()
    now = w.hub.query.run(record.run_id)
    return web.json_response({"ok": True, "id": record.run_id, "round": now.round if now is not None else None,
                              "message": result.message})


async def oracle(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    question = text_field(await read_body(request, {"question": str}), "question")
    return answered(await w.hub.submit(Oracle(record.run_id, question), WEB_USER))


async def say(request: web.Request) -> web.Response:
    w, record = web_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    thread = w.page_thread(record)
    result = await w.hub.submit(Said(text), WEB_USER, where=thread) if thread is not None else None
    if result is None or result.ignored:
        raise ApiError(409, f"run {record.run_id} is not shown on this page")
    return answered(result)


async def action(request: web.Request) -> web.Response:
    w = web_of(request)
    data = await read_body(request, {"action_id": str, "text": str, "delivery_id": str})
    action_id = text_field(data, "action_id")
    try:
        pressed = decode(action_id)
    except IdError as exc:
        raise ApiError(400, f"not a button of this bot: {exc}") from None
    text = data.get("text")
    if text is not None:
        text = text_field(data, "text", empty_ok=True)
    record = w.hub.query.run(pressed.run_id)
    where = w.where(record) if record is not None else None
    result = await w.hub.submit(Click(action_id, text), WEB_USER, delivery_id=data.get("delivery_id") or None,
                                where=where)
    if result.ok or result.duplicate:
        return web.json_response({"ok": result.ok, "message": result.message, "id": result.run_id,
                                  "needs_input": result.needs_input, "duplicate": result.duplicate})
    return answered(result)


def routes() -> list[web.RouteDef]:
    return [
        web.get("/api/runs", list_runs),
        web.post("/api/runs", start_run),
        web.get("/api/runs/{run_id}", get_run),
        web.get("/api/runs/{run_id}/asks", asks),
        web.post("/api/runs/{run_id}/answer", answer),
        web.post("/api/runs/{run_id}/decline", decline),
        web.post("/api/runs/{run_id}/approve", approve),
        web.post("/api/runs/{run_id}/send", send),
        web.post("/api/runs/{run_id}/interrupt", interrupt),
        web.post("/api/runs/{run_id}/end", end),
        web.post("/api/runs/{run_id}/wake", wake),
        web.post("/api/runs/{run_id}/continue", continue_run),
        web.post("/api/runs/{run_id}/oracle", oracle),
        web.post("/api/runs/{run_id}/say", say),
        web.post("/api/action", action),
    ]
