"""What the web front end sends, as JSON (pure: plain values in, dicts out, no I/O).

======================  ====================================================================================
built                   shape
======================  ====================================================================================
`message_json`          a neutral message as the page renders it: {"key", "kind", "title", "text", "fields":
                        [[k, v]], "buttons": [{"label", "action_id", "style"}], "important", "origin", "tone",
                        "file": {"name", "size", "path", "url"} | null}; the store adds "id", "pos", "seq"
`stamped`               that body with "at", when this version was stored (the page counts Elapsed from it)
`run_json`              a run: {"id", "task", "status", "owner", "platform", "thread", "page_thread",
                        "created_at", "updated_at", "round", "live", "worker"}
`ask_json`              an open card, the seed's shape: {"id", "question", "options", "waited_s", "kind"
                        [, "tool", "input"][, "plan", "plan_chars"]} ("kind": "question", "approval", "budget"
                        or "plan"; a plan card's "plan" is its text, cut at 20000 characters of "plan_chars")
`result_json`           an intent's outcome: {"ok": true, "message", "id", …} 200, or a refusal {"ok": false,
                        "error", "id", "duplicate"} 409 (nothing changed)
`click_json`            a button's outcome, which may ask for words first ("needs_input") or be a replay
`attached_json`         files attached: 201 {"ok", "message", "id", "files": [{"name", "path", "size"}]}, or a
                        refusal: 413 too large, 400 a bad file, 409 the hub's own
`activity_json`         a run's tool calls, one line each, for the page's activity strip
`routine_json`          a routine: {"id", "name", "task", "schedule", "spec", "timezone", "place", "owner",
                        "overlap", "catch_up", "paused", "next", "state", "source", "last": [{"due", "run_id", "kind",
                        "state", "note"}]} ("next": ISO 8601 with offset, null when none; "state": the lists' words)
======================  ====================================================================================

Each answer builder returns (body, HTTP status); the route handlers (api.py, files.py) make the response.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from adapters.hub import Attached, Chosen, IntentResult, OpenCard, RoutineInfo
from adapters.platform import OutMessage, ThreadRef
from adapters.state import RunRecord
from adapters.view import fmt
from adapters.web.events import json_safe
from flower_core import Event
from flower_core.human.plan_review import KIND as PLAN_KIND
from flower_core.payloads import ThreadPayload

__all__ = ["ASK_TOOL", "activity_json", "ask_json", "attached_json", "click_json", "file_json", "message_json",
           "result_json", "routine_json", "run_json", "stamped"]

ASK_TOOL = "mcp__human__ask"  # the agent's questions are cards on the page, not activity


# ---- messages ------------------------------------------------------------------------------------
def message_json(msg: OutMessage) -> dict[str, Any]:
    """The neutral message as the page renders it (ids, seq and pos are added by the store)."""
    return {"key": msg.key, "kind": msg.kind, "title": msg.title, "text": msg.text,
            "fields": [[k, v] for k, v in msg.fields],
            "buttons": [{"label": b.label, "action_id": b.action_id, "style": b.style} for b in msg.buttons],
            "important": msg.important, "origin": msg.origin, "tone": getattr(msg, "tone", ""),
            "file": file_json(msg), **({"live": msg.live} if msg.live else {}),
            **({"tasks": [{"id": t.id, "title": t.title, "status": t.status, "output": t.output} for t in msg.tasks]}
               if msg.tasks else {}), **({"plan": True} if msg.plan else {})}


def stamped(body: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The body with `at`, the server's wall-clock time of this version (`now`, else the clock's): the page
    counts a live status card's Elapsed on from it between the card's edits (the server edits it only at
    milestones)."""
    return {**body, "at": round(time.time() if now is None else now, 3)}


def file_json(msg: OutMessage) -> dict[str, Any] | None:
    """A file the agent shared, or one written beside the run: the page links to its download route
    (adapters/web/files.py)."""
    att = msg.attachment
    if att is None or not att.run_id or not (att.rel or att.beside):
        return None
    if not att.rel:  # a file the framework wrote beside the run (a whole plan, a whole diff)
        return {"name": att.name, "size": att.size, "path": att.beside,
                "url": f"/api/runs/{quote(att.run_id)}/beside/{quote(att.beside)}"}
    return {"name": att.name, "size": att.size, "path": att.rel,
            "url": f"/api/runs/{quote(att.run_id)}/files/{quote(att.rel)}"}


# ---- runs and their cards ------------------------------------------------------------------------
def run_json(r: RunRecord, *, page: ThreadRef | None, live: bool, worker: str,
             chosen: Chosen | None = None) -> dict[str, Any]:
    """A run as the API and the page list it: `page` the page's thread of it (None: not shown here), `live`
    and `worker` as the hub says (the worker is "" in this process); `chosen` its model and effort (None: the
    CLI's defaults)."""
    return {"id": r.run_id, "task": r.task, "status": r.status, "owner": r.owner, "platform": r.thread.platform,
            "thread": str(r.thread), "page_thread": str(page) if page is not None else None,
            "created_at": r.created_at, "updated_at": r.updated_at, "round": r.round,
            "live": live, "worker": worker, "model": (chosen.model if chosen else "") or None,
            "effort": (chosen.effort if chosen else "") or None}


def routine_json(info: RoutineInfo) -> dict[str, Any]:
    r = info.routine
    zone = ZoneInfo(r.timezone)
    return {"id": r.routine_id, "name": r.name, "task": r.task, "schedule": info.said, "spec": r.schedule,
            "timezone": r.timezone, "place": f"{r.place.platform}:{r.place.channel}", "owner": r.owner,
            "overlap": r.overlap, "catch_up": r.catch_up, "paused": r.paused, "next": info.next, "state": info.state,
            "source": r.source,
            "last": [{"due": datetime.fromtimestamp(o.due, zone).isoformat(timespec="seconds"), "run_id": o.run_id,
                      "kind": o.kind, "state": o.state, "note": o.note} for o in info.last]}


def ask_json(card: OpenCard) -> dict[str, Any]:
    out = {"id": card.card_id, "question": card.question, "options": card.options, "waited_s": card.waited_s,
           "kind": card.kind or "question"}
    if card.kind == "approval":
        out.update(tool=card.facts.get("tool", ""), input=json_safe(card.facts.get("input") or {}))
    elif card.kind == PLAN_KIND:
        text, chars = card.facts.get("plan"), card.facts.get("plan_chars")
        text = text if isinstance(text, str) else ""
        out.update(plan=text, plan_chars=chars if isinstance(chars, int) and not isinstance(chars, bool) else len(text))
    return out


def activity_json(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Logged events (adapters/web/events.py) as the page's activity lines: tool calls but the agent's
    questions, {"seq", "tool", "text", "sub"} (sub: a subagent's)."""
    return [{"seq": e["seq"], "tool": fmt.tool_name(e["tool"]), "text": fmt.one_line(e["text"], 160),
             "sub": ThreadPayload.of(Event(e["kind"], payload=e["payload"])).subagent}
            for e in events if e["kind"] == "tool_call" and e["tool"] != ASK_TOOL]


# ---- intents' outcomes ---------------------------------------------------------------------------
def result_json(result: IntentResult, **extra: Any) -> tuple[dict[str, Any], int]:
    """A hub result as the answer: refusals are 409 (nothing changed), with the hub's reason. An API client
    is always told the hub's message (it decides what to show), unlike a chat's `to_show`."""
    if result.ok:
        return {"ok": True, "message": result.message, "id": result.run_id, **extra}, 200
    return {"ok": False, "error": result.message, "id": result.run_id, "duplicate": result.duplicate}, 409


def click_json(result: IntentResult) -> tuple[dict[str, Any], int]:
    """A button's outcome: done, a button that wants words first, or a replayed / late click (200, with
    "duplicate"); any other refusal as `result_json`."""
    if result.ok or result.duplicate:
        return {"ok": result.ok, "message": result.message, "id": result.run_id, "needs_input": result.needs_input,
                "duplicate": result.duplicate}, 200
    return result_json(result)


def attached_json(result: Attached) -> tuple[dict[str, Any], int]:
    if result.ok:
        return {"ok": True, "message": result.message, "id": result.run_id,
                "files": [{"name": f.name, "path": f.path, "size": f.size} for f in result.files]}, 201
    status = {"too_large": 413, "bad_file": 400}.get(result.problem, 409)
    return {"ok": False, "error": result.message, "id": result.run_id}, status
