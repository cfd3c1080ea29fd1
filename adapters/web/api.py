"""The HTTP API: the seed's "sequence number + polling" front end, over the hub's intents.

=========================================  =============================================================
route                                      body → answer
=========================================  =============================================================
GET  /api/runs                             → {"runs": [run, …]} newest first
POST /api/runs                             {"task", "timeout_s"?, "max_asks"?, "budget_usd"?, "approve"?: ["Bash", …],
                                             "model"?, "effort"?, "plan"?: true} → 201 {"id", …}
GET  /api/runs/{id}                        → run
GET  /api/runs/{id}/events?after=N         → {"events": [{"seq","kind","text","tool","payload"}], "dropped",
                                             "first", "last", "status", "live"}
GET  /api/runs/{id}/asks                   → [{"id","question","options","waited_s","kind"[,"tool","input"]
                                             [,"plan","plan_chars"]}, …] (the seed's shape; "kind": "question",
                                             "approval", "budget" or "plan")
POST /api/runs/{id}/answer                 {"ask_id", "text"}
POST /api/runs/{id}/decline                {"ask_id", "text"?}  (text = the reason, may be empty)
POST /api/runs/{id}/approve                {"ask_id", "decision": "once"|"run"|"deny", "text"?}  a tool approval
POST /api/runs/{id}/plan                   {"ask_id", "decision": "go"|"go_ask"|"revise", "text"?}  a plan card
                                             (text: revise's words, what the agent reads before it plans again)
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
The handlers here only wire: bodies are read into intents by inbound.py, answers built by render.py,
failures answered by errors.py, over the front end's one `WebContext` (context.py).

Intents answer {"ok": true, "message", "id"}. Bad input
answers {"ok": false, "error"} with 400 (malformed or missing field, empty text), 404 (unknown run
or question), 405 (a method the route does not take; `Allow` lists those it does), 409 (the hub
refused: settled question, run not running, limit reached…), 413 (body over the size limit) or 415
(not JSON) — and changes nothing. Numbers must be finite (JSON's NaN/Infinity are refused) and a
body is one flat object, so one nested too deeply for the parser is malformed, not a crash.
"""

from __future__ import annotations

import asyncio
import re
import uuid

from aiohttp import web

from adapters.hub import (
    NOT_MINE,
    Answer,
    Approve,
    CardProblem,
    Continue,
    Decline,
    Interrupt,
    Oracle,
    Said,
    Send,
    Steer,
    Stop,
    Undo,
    Wake,
)
from adapters.platform import ThreadRef
from adapters.state import RunRecord
from adapters.web.context import PLATFORM, WEB_USER, WebContext, context_of, read_body, record_of
from adapters.web.errors import ApiError
from adapters.web.inbound import (
    MODEL_FIELDS,
    PLAN_FIELDS,
    START_FIELDS,
    button_run,
    read_approval,
    read_click,
    read_model,
    read_plan,
    read_start,
    text_field,
)
from adapters.web.render import ask_json, click_json
from flower_core.human.plan_review import KIND as PLAN_KIND

__all__ = ["new_thread", "routes"]


def new_thread() -> ThreadRef:
    return ThreadRef(PLATFORM, "page", "t" + uuid.uuid4().hex[:12])


# ---- runs ----------------------------------------------------------------------------------------
async def list_runs(request: web.Request) -> web.Response:
    ctx = context_of(request)
    return web.json_response({"runs": [ctx.run_json(r) for r in ctx.hub.query.runs(live_only=False)]})


async def start_run(request: web.Request) -> web.Response:
    ctx = context_of(request)
    start = read_start(await read_body(request, START_FIELDS))
    thread = new_thread()
    result = await ctx.hub.submit(start, WEB_USER, where=thread)
    if not result.ok:
        return ctx.show(result)
    ctx.runs_changed()
    return web.json_response({"ok": True, "id": result.run_id, "message": result.message, "thread": str(thread)},
                             status=201)


async def get_run(request: web.Request) -> web.Response:
    return web.json_response(context_of(request).run_json(record_of(request)))


async def asks(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    return web.json_response([ask_json(c) for c in ctx.hub.query.open_cards(record.run_id)])


def resolve_card(ctx: WebContext, record: RunRecord, ask_id: str) -> str:
    """The card an ask id names ("1-q2", or the seed's "q2" for the newest open card of that name);
    404 when unknown, 409 when already settled (the hub's one rule for cards)."""
    card_id = ask_id
    problem, message = ctx.hub.query.card_state(record.run_id, card_id)
    if problem is CardProblem.UNKNOWN and re.fullmatch(r"q[0-9]{1,6}", ask_id):
        card_id = ctx.hub.query.card_by_key(record.run_id, ask_id) or ask_id
        problem, message = ctx.hub.query.card_state(record.run_id, card_id)
    if problem is CardProblem.UNKNOWN:
        raise ApiError(404, f"run {record.run_id} has no question {ask_id!r} (GET .../asks lists the open ones)")
    if problem in (CardProblem.SETTLED, CardProblem.ENDED):
        raise ApiError(409, f"question {card_id}: {message}")
    return card_id


async def answer(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    data = await read_body(request, {"ask_id": str, "text": str})
    ask_id, text = text_field(data, "ask_id"), text_field(data, "text")
    card_id = resolve_card(ctx, record, ask_id.strip())
    result = await ctx.hub.submit(Answer(record.run_id, card_id, text), WEB_USER, where=ctx.where(record))
    return ctx.show(result, ask_id=card_id)


async def decline(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    data = await read_body(request, {"ask_id": str, "text": str})
    ask_id, reason = text_field(data, "ask_id"), text_field(data, "text", required=False, empty_ok=True)
    card_id = resolve_card(ctx, record, ask_id.strip())
    result = await ctx.hub.submit(Decline(record.run_id, card_id, reason), WEB_USER, where=ctx.where(record))
    return ctx.show(result, ask_id=card_id)


async def approve(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    ask_id, decision, words = read_approval(await read_body(request, {"ask_id": str, "decision": str, "text": str}))
    card_id = resolve_card(ctx, record, ask_id.strip())
    if not any(c.card_id == card_id and c.kind == "approval" for c in ctx.hub.query.open_cards(record.run_id)):
        raise ApiError(400, f"{card_id} is a question, not a tool approval: use .../answer or .../decline")
    result = await ctx.hub.submit(Approve(record.run_id, card_id, decision, words), WEB_USER, where=ctx.where(record))
    return ctx.show(result, ask_id=card_id)


async def plan(request: web.Request) -> web.Response:
    """A plan-first run's plan card: go / go_ask answer it with that option, revise with the words (the card's own
    rule, flower_core/human/plan_review.py), through the door like any answer."""
    ctx, record = context_of(request), record_of(request)
    ask_id, answer_text = read_plan(await read_body(request, PLAN_FIELDS))
    card_id = resolve_card(ctx, record, ask_id.strip())
    if not any(c.card_id == card_id and c.kind == PLAN_KIND for c in ctx.hub.query.open_cards(record.run_id)):
        raise ApiError(400, f"{card_id} is not a plan card: use .../answer, .../decline or .../approve")
    result = await ctx.hub.submit(Answer(record.run_id, card_id, answer_text), WEB_USER, where=ctx.where(record))
    return ctx.show(result, ask_id=card_id)


async def send(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    return ctx.show(await ctx.hub.submit(Send(record.run_id, text), WEB_USER, where=ctx.where(record)))


async def interrupt(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text", required=False, empty_ok=True)
    return ctx.show(await ctx.hub.submit(Interrupt(record.run_id, text), WEB_USER))


async def end(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    await read_body(request, {})
    return ctx.show(await ctx.hub.submit(Stop(record.run_id), WEB_USER))


async def wake(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    remark = text_field(await read_body(request, {"text": str}), "text", required=False, empty_ok=True)
    return ctx.show(await ctx.hub.submit(Wake(record.run_id, remark), WEB_USER))


async def continue_run(request: web.Request) -> web.Response:
    """An ended run's next round, in the same session; a live run takes words as mail (`/send`)."""
    ctx, record = context_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    if ctx.hub.query.is_live(record.run_id):
        raise ApiError(409, f"run {record.run_id} is still going: write to it with POST /api/runs/{record.run_id}/send")
    result = await ctx.hub.submit(Continue(record.run_id, text), WEB_USER, where=ctx.where(record))
    if not result.ok:
        return ctx.show(result)
    ctx.runs_changed()
    now = ctx.hub.query.run(record.run_id)
    return web.json_response({"ok": True, "id": record.run_id, "round": now.round if now is not None else None,
                              "message": result.message})


async def model(request: web.Request) -> web.Response:
    """A new model and/or effort: {"ok", "model", "effort"} as the run now has them; 409 when refused."""
    ctx, record = context_of(request), record_of(request)
    name, effort = read_model(await read_body(request, MODEL_FIELDS))
    result = await ctx.hub.submit(Steer(record.run_id, name, effort), WEB_USER)
    if not result.ok:
        return ctx.show(result)
    now = ctx.hub.query.model(record.run_id)
    return web.json_response({"ok": True, "message": result.message, "model": now.model if now else "",
                              "effort": now.effort if now else ""})


async def checkpoints(request: web.Request) -> web.Response:
    """[{"id", "label", "at", "files"}], newest first: `files` are what undoing to it would put back."""
    ctx, record = context_of(request), record_of(request)
    listed = await asyncio.to_thread(ctx.hub.query.checkpoints, record.run_id) or []
    return web.json_response([{"id": cp.id, "label": cp.label, "at": round(cp.at, 3), "files": files}
                              for cp, files in listed])


async def undo(request: web.Request) -> web.Response:
    """{"checkpoint"}: the workspace back as it was then (409 while the run or another in its workspace is live;
    404 an unknown checkpoint)."""
    ctx, record = context_of(request), record_of(request)
    name = text_field(await read_body(request, {"checkpoint": str}), "checkpoint").strip()
    listed = await asyncio.to_thread(ctx.hub.query.checkpoints, record.run_id) or []
    if not any(cp.id == name for cp, _ in listed):
        raise ApiError(404, f"run {record.run_id} has no checkpoint {name!r} (GET .../checkpoints lists them)")
    return ctx.show(await ctx.hub.submit(Undo(record.run_id, name), WEB_USER, where=ctx.where(record)))


async def oracle(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    question = text_field(await read_body(request, {"question": str}), "question")
    return ctx.show(await ctx.hub.submit(Oracle(record.run_id, question), WEB_USER))


async def say(request: web.Request) -> web.Response:
    ctx, record = context_of(request), record_of(request)
    text = text_field(await read_body(request, {"text": str}), "text")
    thread = ctx.page_thread(record)
    result = await ctx.hub.submit(Said(text), WEB_USER, where=thread) if thread is not None else None
    if result is None or result.ignored:
        raise ApiError(409, f"run {record.run_id} is not shown on this page")
    return ctx.show(result)


async def action(request: web.Request) -> web.Response:
    ctx = context_of(request)
    click, delivery_id = read_click(await read_body(request, {"action_id": str, "text": str, "delivery_id": str}))
    run_id = button_run(click.action_id)
    record = ctx.hub.query.run(run_id) if run_id is not None else None
    where = ctx.where(record) if record is not None else None
    result = await ctx.hub.submit(click, WEB_USER, delivery_id=delivery_id, where=where)
    if not result.ok and result.message.startswith(NOT_MINE):  # the door's word; malformed input for the API
        raise ApiError(400, f"not a button of this bot: {result.message}")
    body, status = click_json(result)
    return web.json_response(body, status=status)


def routes() -> list[web.RouteDef]:
    return [
        web.get("/api/runs", list_runs),
        web.post("/api/runs", start_run),
        web.get("/api/runs/{run_id}", get_run),
        web.get("/api/runs/{run_id}/asks", asks),
        web.post("/api/runs/{run_id}/answer", answer),
        web.post("/api/runs/{run_id}/decline", decline),
        web.post("/api/runs/{run_id}/approve", approve),
        web.post("/api/runs/{run_id}/plan", plan),
        web.post("/api/runs/{run_id}/send", send),
        web.post("/api/runs/{run_id}/interrupt", interrupt),
        web.post("/api/runs/{run_id}/end", end),
        web.post("/api/runs/{run_id}/wake", wake),
        web.post("/api/runs/{run_id}/continue", continue_run),
        web.post("/api/runs/{run_id}/oracle", oracle),
        web.post("/api/runs/{run_id}/model", model),
        web.get("/api/runs/{run_id}/checkpoints", checkpoints),
        web.post("/api/runs/{run_id}/undo", undo),
        web.post("/api/runs/{run_id}/say", say),
        web.post("/api/action", action),
    ]
