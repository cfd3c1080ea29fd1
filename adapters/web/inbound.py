"""What the web front end is sent, read into plain values and hub intents (pure: no I/O).

================================  =================================================================
read                              from → into
================================  =================================================================
`parse_body(raw, type, fields)`   a request body's bytes → one flat JSON object, checked field by field
                                  against `fields` (name → accepted types)
`text_field`, `number_field`      one field of that object → text (bounded, non-empty unless allowed),
                                  a number ≥ 0 (None when absent)
`read_start`                      POST /api/runs → `Start(task, RunOptions)`
`read_approval`                   POST …/approve → (ask id, decision once|run|deny, words)
`read_plan`                       POST …/plan → (ask id, the answer the plan card takes: an approving
                                  option, or the words to keep planning with)
`read_click`                      POST /api/action → (`Click`, its run id, the delivery id or None)
`read_routine`                    POST /api/routines → `AddRoutine` (its "options" read as a start's)
`after_cursor`, `show_all`        the `?after=N` and `?all=0|1` query parameters
`page_frame`, `cursor`            a frame of the page's WebSocket → a watch, a ping (None) or a complaint
================================  =================================================================

Anything wrong raises `ApiError` (adapters/web/errors.py) with the status and a sentence fit for the
person who sent it: 400 malformed or missing, 415 not JSON. Numbers must be finite (JSON's
NaN/Infinity are refused), JSON true is not the number 1, and a body is one flat object, so one
nested too deeply for the parser is malformed, not a crash.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from adapters.hub import AddRoutine, Click, RunOptions, Start
from adapters.ids import IdError, decode
from adapters.platform.limits import WEB
from adapters.web.errors import ApiError
from flower_core.human.plan_review import DECISIONS, KEEP_PLANNING, REVISE, decision_of, option_of

__all__ = ["APPROVAL_DECISIONS", "PLAN_FIELDS", "Fields", "after_cursor", "cursor", "number_field", "page_frame",
           "parse_body", "read_approval", "read_click", "read_plan", "read_routine", "read_start", "show_all", "shown",
           "text_field"]

APPROVAL_DECISIONS = ("once", "run", "deny")
Fields = dict[str, type | tuple[type, ...]]  # a body's field name -> the types it accepts


# ---- bodies --------------------------------------------------------------------------------------
def parse_body(raw: bytes, content_type: str, fields: Fields) -> dict[str, Any]:
    """The JSON object in a body (an empty body is {}), checked against `fields`."""
    if not raw.strip():
        data: Any = {}
    else:
        if content_type != "application/json":
            raise ApiError(415, f"send JSON with Content-Type: application/json (got {content_type!r})")
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
            names = ("number" if float in kinds else "whole number" if int in kinds else "boolean (true or false)"
                     if bool in kinds else "object" if dict in kinds else "string")
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


# ---- intents -------------------------------------------------------------------------------------
START_FIELDS: Fields = {"task": str, "timeout_s": (int, float), "max_asks": int, "budget_usd": (int, float),
                        "approve": list, "model": str, "effort": str, "plan": bool}
MODEL_FIELDS: Fields = {"model": str, "effort": str}


def read_start(data: dict[str, Any]) -> Start:
    """A start body (START_FIELDS, checked by `parse_body`): the task and its per-run options."""
    task = text_field(data, "task")
    approve = data.get("approve")
    if approve is not None and not all(isinstance(t, str) for t in approve):
        raise ApiError(400, "'approve' must be a list of tool rules (strings), e.g. [\"Bash\", \"Edit\"]")
    options = RunOptions(timeout_s=number_field(data, "timeout_s"),
                         max_asks=number_field(data, "max_asks", integer=True),
                         budget_usd=number_field(data, "budget_usd"),
                         approve=None if approve is None else tuple(approve),
                         model=text_field(data, "model", required=False).strip() or None,
                         effort=text_field(data, "effort", required=False).strip().lower() or None,
                         plan=True if data.get("plan") else None)  # false: the bot's default (no plan first)
    if (bad := options.problem()) is not None:
        raise ApiError(400, bad)
    return Start(task, options)


def read_model(data: dict[str, Any]) -> tuple[str, str]:
    """A model body (MODEL_FIELDS): the new model and/or effort ("" keeps that part); at least one."""
    model = text_field(data, "model", required=False).strip()
    effort = text_field(data, "effort", required=False).strip().lower()
    if not model and not effort:
        raise ApiError(400, "say a \"model\" or an \"effort\" (or both)")
    return model, effort


ROUTINE_FIELDS: Fields = {"task": str, "schedule": str, "timezone": str, "name": str, "options": dict,
                          "overlap": str, "catch_up": bool}


def read_routine(data: dict[str, Any]) -> AddRoutine:
    """A routine body (ROUTINE_FIELDS): its "options" object takes a start's option fields."""
    task, schedule = text_field(data, "task"), text_field(data, "schedule")
    options: dict[str, Any] = data.get("options") or {}
    for key, value in options.items():
        if key not in START_FIELDS or key == "task":
            raise ApiError(400, f"unknown option {key!r} (known: timeout_s, max_asks, budget_usd, approve, model, "
                           "effort, plan)")
        if isinstance(value, dict | list) and key != "approve":
            raise ApiError(400, f"option {key!r} must be a number, got {shown(value)}")
    checked = parse_body(json.dumps({"task": task, **options}).encode(), "application/json", START_FIELDS)
    overlap = text_field(data, "overlap", required=False) or "skip"
    if overlap not in ("skip", "queue"):
        raise ApiError(400, f"overlap must be \"skip\" or \"queue\", got {shown(overlap)}")
    catch_up = data.get("catch_up")
    return AddRoutine(task, schedule, text_field(data, "timezone", required=False), text_field(data, "name",
                      required=False), read_start(checked).options, overlap, True if catch_up is None else catch_up)


def read_approval(data: dict[str, Any]) -> tuple[str, str, str]:
    """An approval body: the ask id as sent, the decision (one of APPROVAL_DECISIONS), the words with it."""
    ask_id, decision = text_field(data, "ask_id"), text_field(data, "decision").strip()
    words = text_field(data, "text", required=False, empty_ok=True)
    if decision not in APPROVAL_DECISIONS:
        raise ApiError(400, f"decision must be one of {', '.join(APPROVAL_DECISIONS)}, got {shown(decision)}")
    return ask_id, decision, words


PLAN_FIELDS: Fields = {"ask_id": str, "decision": str, "text": str}


def read_plan(data: dict[str, Any]) -> tuple[str, str]:
    """A plan decision body (PLAN_FIELDS): the ask id as sent and the answer that carries the decision — the
    option text for go / go_ask, the words (else "Keep planning…") for revise. Words go with revise only, and
    words the plan card would read as an approval (an approving option's text, "1", "2") are refused: a person
    who asked for more planning must never have approved the plan by accident."""
    ask_id, decision = text_field(data, "ask_id"), text_field(data, "decision").strip()
    words = text_field(data, "text", required=False, empty_ok=True).strip()
    if decision not in DECISIONS:
        raise ApiError(400, f"decision must be one of {', '.join(DECISIONS)}, got {shown(decision)}")
    if decision != REVISE:
        if words:
            raise ApiError(400, f"'text' goes with decision \"revise\" only: {decision} approves the plan as it is")
        return ask_id, option_of(decision)
    if words and decision_of(words)[0] != REVISE:
        raise ApiError(400, f"the words {shown(words)} would read as an approval, not as feedback: say what to plan "
                       "differently, or send decision \"go\" or \"go_ask\"")
    return ask_id, words or KEEP_PLANNING


def read_click(data: dict[str, Any]) -> tuple[Click, str | None]:
    """A button press (`action_id`, words for a button that wants them, the page's `delivery_id`): the
    click and the delivery id (None when the page sent none). Whether the id is ours is the door's to say."""
    action_id = text_field(data, "action_id")
    text = data.get("text")
    if text is not None:
        text = text_field(data, "text", empty_ok=True)
    return Click(action_id, text), data.get("delivery_id") or None


def button_run(action_id: str) -> str | None:
    """The run a button belongs to, to say where the click came from (None: not a button of ours)."""
    try:
        return decode(action_id).run_id
    except IdError:
        return None


# ---- query parameters ----------------------------------------------------------------------------
def after_cursor(raw: str) -> int:
    """`?after=N`: a sequence number, 0 or more."""
    if not re.fullmatch(r"[0-9]{1,18}", raw):
        raise ApiError(400, f"'after' must be a sequence number (0 or more), got {raw[:40]!r}")
    return int(raw)


def show_all(raw: str) -> bool:
    """`?all=`: "1" lists the framework's bookkeeping too; "" and "0" do not."""
    if raw not in ("", "0", "1"):
        raise ApiError(400, f"'all' is 0 or 1 (got {raw[:20]!r})")
    return raw == "1"


# ---- the page's WebSocket --------------------------------------------------------------------------
def page_frame(text: str) -> dict[str, Any] | None:
    """A text frame from the page: None for a ping, the frame itself for a watch, else {"op": "bad"}."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        data = None
    if isinstance(data, dict) and data.get("op") == "ping":
        return None
    return data if isinstance(data, dict) and data.get("op") == "watch" else {"op": "bad"}


def cursor(value: Any) -> int:
    """A cursor a watch frame carries (`after`, `events_after`): a whole number above 0, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
